/*
 * libFuzzer harness for the transport AEAD (daemon/handshake.c):
 * gsp_session_open() on a session with fixed keys, fed a stream of
 * operations.  Each operation is a byte (the low 2 bits the kind, the
 * rest an argument), and most take a length byte and that many bytes:
 *   0 raw:      the bytes are a ciphertext, opened as they are;
 *   1 sealed:   the bytes are a plaintext the peer seals; the argument,
 *               if not 0, flips one bit of the ciphertext or cuts it;
 *   2 replay:   the last ciphertext the peer sealed is offered again;
 *   3 counters: both counters jump close to GSP_SESSION_MAX_FRAMES (or,
 *               with argument 1, the sender's runs ahead by one frame).
 * Checks: an open succeeds only for the ciphertext the peer sealed at the
 * receiver's counter and gives back its plaintext (a raw success must
 * re-seal to the same bytes); a refused open changes nothing in the
 * session; the counter limit refuses with -EOVERFLOW.  Ciphertexts and
 * outputs are exact-size heap buffers, so AddressSanitizer sees any
 * access past them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "handshake.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (sodium_init() < 0)
		abort();
	return 0;
}

static uint8_t *copy_of(const uint8_t *p, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);
	if (!c)
		abort();
	if (n)
		memcpy(c, p, n);
	return c;
}

/* Opens ct on rx; returns the result after checking that a refusal left
 * rx unchanged. */
static int open_checked(gsp_session *rx, const uint8_t *ct, size_t len,
			uint8_t **ret_pt)
{
	gsp_session before = *rx;
	uint8_t *pt = malloc(len > GSP_SESSION_OVERHEAD ?
			     len - GSP_SESSION_OVERHEAD : 1);
	if (!pt)
		abort();
	int r = gsp_session_open(rx, ct, len, pt);
	if (r != 0 && r != -EBADMSG && r != -EOVERFLOW)
		abort();
	if (r == 0 ? rx->rx_n != before.rx_n + 1
		   : memcmp(&before, rx, sizeof(before)) != 0)
		abort();
	/* Past the limit every frame is refused as such (a short one is
	 * malformed first). */
	if ((r == -EOVERFLOW) != (len >= GSP_SESSION_OVERHEAD &&
				  before.rx_n >= GSP_SESSION_MAX_FRAMES))
		abort();
	if (r == 0 && len < GSP_SESSION_OVERHEAD)
		abort();
	*ret_pt = pt;
	return r;
}

/* What a receiver at counter n must do with a frame sealed at counter
 * sent: open it only if it is untouched and n is that counter. */
static bool opens(bool tampered, uint64_t sent, const gsp_session *rx)
{
	return !tampered && sent == rx->rx_n && rx->rx_n < GSP_SESSION_MAX_FRAMES;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gsp_session tx, rx;
	uint8_t *last = NULL;         /* the last sealed frame, as offered */
	size_t last_len = 0;
	uint64_t last_n = 0;          /* its counter */
	bool last_tampered = false;

	memset(&tx, 0, sizeof(tx));
	memset(tx.tx_key, 0x33, sizeof(tx.tx_key));
	memset(tx.rx_key, 0x44, sizeof(tx.rx_key));
	rx = tx;
	memcpy(rx.tx_key, tx.rx_key, sizeof(rx.tx_key));
	memcpy(rx.rx_key, tx.tx_key, sizeof(rx.rx_key));

	while (size) {
		uint8_t op = data[0], kind = op & 3, arg = op >> 2;
		size_t len = 0;
		data++;
		size--;
		if (kind <= 1 && size) {
			len = data[0];
			data++;
			size--;
			if (len > size)
				len = size;
		}
		uint8_t *pt = NULL, *in = copy_of(data, len);
		data += len;
		size -= len;

		if (kind == 0) {
			uint64_t n = rx.rx_n;
			if (open_checked(&rx, in, len, &pt) == 0) {
				/* Only the peer's own frame opens. */
				gsp_session again = tx;
				uint8_t *ct = malloc(len);
				if (!ct)
					abort();
				again.tx_n = n;
				if (gsp_session_seal(&again, pt,
						     len - GSP_SESSION_OVERHEAD, ct) ||
				    memcmp(ct, in, len) != 0)
					abort();
				free(ct);
			}
		} else if (kind == 1) {
			size_t ctlen = len + GSP_SESSION_OVERHEAD;
			uint8_t *ct = malloc(ctlen);
			if (!ct)
				abort();
			uint64_t sent = tx.tx_n;
			int r = gsp_session_seal(&tx, in, len, ct);
			if (sent >= GSP_SESSION_MAX_FRAMES) {
				if (r != -EOVERFLOW || tx.tx_n != sent)
					abort();
				free(ct);
				free(in);
				continue;
			}
			if (r != 0 || tx.tx_n != sent + 1)
				abort();
			if (arg >= 32)      /* cut 1..32 bytes off the end */
				ctlen -= 1 + (size_t)(arg - 32) % ctlen;
			else if (arg)       /* flip one bit */
				ct[(arg - 1) % ctlen] ^= (uint8_t)(1u << (arg % 8));
			free(last);
			last = copy_of(ct, ctlen);
			last_len = ctlen;
			last_n = sent;
			last_tampered = arg != 0;
			free(ct);
			bool want = opens(last_tampered, last_n, &rx);
			r = open_checked(&rx, last, last_len, &pt);
			if ((r == 0) != want ||
			    (r == 0 && len && memcmp(pt, in, len) != 0))
				abort();
		} else if (kind == 2) {
			/* Replayed: opens only if it never did, at its counter. */
			bool want = opens(last_tampered, last_n, &rx);
			if (last && (open_checked(&rx, last, last_len, &pt) == 0) != want)
				abort();
		} else if (arg == 1) {
			tx.tx_n++;          /* a frame lost on the way */
		} else {
			/* Both counters forward, to a few frames before the
			 * limit (never back: that would allow replays). */
			uint64_t at = GSP_SESSION_MAX_FRAMES - 1 - arg % 4;
			if (tx.tx_n < at)
				tx.tx_n = at;
			if (rx.rx_n < at)
				rx.rx_n = at;
		}
		free(pt);
		free(in);
	}
	free(last);
	gsp_session_clear(&tx);
	gsp_session_clear(&rx);
	return 0;
}
