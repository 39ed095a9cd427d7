/*
 * libFuzzer harness for the handshake's readers (daemon/handshake.c):
 * gsp_hs_read_init() and gsp_hs_read_response(), fed through proto's
 * HS_INIT / HS_RESP decoders as the daemon feeds them, against fixed static
 * keys.  libsodium's random stream is made deterministic per input, so the
 * genuine messages are the same on every run and the fuzzer can aim at
 * them.
 *
 * Input: a flags byte, then an HS_INIT candidate (a length byte and that
 * many bytes; with flag bit 3, two length bytes, little-endian, and the
 * genuine INIT carries a certificate, opaque bytes to the handshake) and
 * an HS_RESP candidate (one length byte).  With flag bit 0 (bit 1)
 * the INIT (RESP) candidate is XORed over the genuine message, so all-zero
 * bytes are the genuine message and anything else is tampering; without
 * it, the bytes are the message.  With flag bit 2, an INIT candidate of
 * the message's size gets a valid mac1 for what it holds, so tampering
 * reaches the Diffie-Hellman and AEAD checks behind the gate.  Checks:
 *   - each reader accepts exactly the genuine payload behind the genuine
 *     clear bytes (nobody forges a tag; a rewritten version fails too)
 *     and returns the initiator's static key, timestamp and certificate;
 *   - the INIT reader refuses with -EPERM, its state untouched, exactly
 *     the INITs of a length in range whose mac1 the specification's text
 *     (tests/common/hsmac1.h) says is wrong;
 *   - a refused INIT leaves the responder's state wiped, a refused RESPONSE
 *     leaves the initiator's state as it was, so the genuine RESPONSE still
 *     completes the handshake;
 *   - the readers refuse any length but their own, on the raw bytes too;
 *   - both ends end with mirrored keys and the same edge seed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "handshake.h"
#include "proto.h"
#include "../common/hsmac1.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Deterministic randombytes: block i of the stream is
 * randombytes_buf_deterministic() under the seed i. */
static uint64_t rng_calls;

static void rng_buf(void *const buf, const size_t size)
{
	uint8_t seed[randombytes_SEEDBYTES] = {0};
	memcpy(seed, &rng_calls, sizeof(rng_calls));
	rng_calls++;
	randombytes_buf_deterministic(buf, size, seed);
}

static uint32_t rng_random(void)
{
	uint32_t v;
	rng_buf(&v, sizeof(v));
	return v;
}

static const char *rng_name(void)
{
	return "fuzz-deterministic";
}

static randombytes_implementation rng = {
	.implementation_name = rng_name,
	.random = rng_random,
	.buf = rng_buf,
};

static gsp_keypair initiator, responder;
static const uint8_t timestamp[GSP_HS_TIMESTAMP] = {
	0x40, 0, 0, 0, 0x69, 0x2d, 0x0c, 0x8a, 0, 0, 0, 1,
};
/* The genuine INIT's certificate with flag bit 3: opaque to the
 * handshake, so any bytes of a certificate's length do. */
static uint8_t cert[200];
static size_t cert_len;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint8_t priv[GSP_KEY_BYTES];
	if (randombytes_set_implementation(&rng) != 0 || sodium_init() < 0)
		abort();
	memset(priv, 0x11, sizeof(priv));
	if (gsp_keypair_from_private(priv, &initiator))
		abort();
	memset(priv, 0x22, sizeof(priv));
	if (gsp_keypair_from_private(priv, &responder))
		abort();
	for (size_t i = 0; i < sizeof(cert); i++)
		cert[i] = (uint8_t)(i * 7 + 3);
	return 0;
}

/* The next candidate: a length byte (two with wide), then up to that
 * many bytes (XORed over genuine[0..glen) when xor is set), as an
 * exact-size heap copy. */
static uint8_t *candidate(const uint8_t **data, size_t *size, bool xor,
			  const uint8_t *genuine, size_t glen, size_t *ret_len,
			  bool wide)
{
	size_t len = 0;
	for (int k = 0; k < (wide ? 2 : 1) && *size; k++) {
		len |= (size_t)**data << (8 * k);
		(*data)++;
		(*size)--;
	}
	if (len > *size)
		len = *size;
	uint8_t *c = malloc(len ? len : 1);
	if (!c)
		abort();
	for (size_t i = 0; i < len; i++)
		c[i] = (*data)[i] ^ (xor && i < glen ? genuine[i] : 0);
	*data += len;
	*size -= len;
	*ret_len = len;
	return c;
}

static void check_code(int r)
{
	if (r != 0 && r != -EBADMSG && r != -ENOMSG && r != -EPROTONOSUPPORT)
		abort();
}

/* The clear bytes of the genuine messages. */
static uint8_t init_clear[GSP_HS_CLEAR], resp_clear[GSP_HS_CLEAR];

/* A reader's result r for clear bytes and payload: 0 exactly for the
 * genuine ones (payload of glen bytes), else -EBADMSG. */
static void expect(int r, const uint8_t *clear, const uint8_t *gclear,
		   const uint8_t *payload, size_t len, const uint8_t *genuine,
		   size_t glen)
{
	bool want = len == glen && memcmp(payload, genuine, glen) == 0 &&
		    memcmp(clear, gclear, GSP_HS_CLEAR) == 0;
	if (r != 0 && r != -EBADMSG)
		abort();
	if ((r == 0) != want)
		abort();
}

/* Responder: reads INIT; true if accepted, and then hr is ready to
 * respond.  Checks the oracle against the genuine payload. */
static bool read_init(gsp_hs *hr, const uint8_t *clear, const uint8_t *payload,
		      size_t len, const uint8_t *genuine, size_t glen)
{
	uint8_t peer[GSP_KEY_BYTES], ts[GSP_HS_TIMESTAMP], mac1[GSP_HS_MAC1];
	uint8_t got[GSP_CERT_MAX];
	size_t got_len = 0;
	bool mac1_bad = false, in_range = len >= GSP_HS_INIT_BYTES &&
					  len <= GSP_HS_INIT_MAX_BYTES;
	if (in_range) {
		hs_spec_mac1_at(responder.pub, clear, payload, len - GSP_HS_MAC1, mac1);
		mac1_bad = memcmp(mac1, payload + len - GSP_HS_MAC1, GSP_HS_MAC1) != 0;
	}
	memset(peer, 0xa5, sizeof(peer));
	gsp_hs before = *hr;
	int r = gsp_hs_read_init_cert(hr, &responder, clear, payload, len, peer, ts,
				      got, &got_len);
	if ((r == -EPERM) != mac1_bad)
		abort();
	if (r == -EPERM) {
		/* Refused at the gate: nothing done, nothing returned. */
		if (memcmp(&before, hr, sizeof(before)) != 0)
			abort();
		for (size_t i = 0; i < sizeof(peer); i++)
			if (peer[i] != 0xa5)
				abort();
		return false;
	}
	expect(r, clear, init_clear, payload, len, genuine, glen);
	if (r != 0) {
		/* Nothing returned, and the secrets are gone. */
		for (size_t i = 0; i < sizeof(peer); i++)
			if (peer[i] != 0xa5)
				abort();
		if (in_range && !sodium_is_zero((const unsigned char *)hr, sizeof(*hr)))
			abort();
		return false;
	}
	if (memcmp(peer, initiator.pub, GSP_KEY_BYTES) != 0 ||
	    memcmp(ts, timestamp, sizeof(ts)) != 0 || got_len != cert_len ||
	    memcmp(got, cert, cert_len) != 0)
		abort();
	return true;
}

/* Initiator: reads RESPONSE; true if accepted.  A refusal changes
 * nothing in hi. */
static bool read_response(gsp_hs *hi, const uint8_t *clear,
			  const uint8_t *payload, size_t len,
			  const uint8_t *genuine, gsp_session *sa)
{
	gsp_hs before = *hi;
	int r = gsp_hs_read_response(hi, clear, payload, len, sa);
	expect(r, clear, resp_clear, payload, len, genuine, GSP_HS_RESP_BYTES);
	if (r != 0 && memcmp(&before, hi, sizeof(before)) != 0)
		abort();
	return r == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gsp_hs hi, hr, scratch;
	gsp_session sa, sb;
	uint8_t init[GSP_HS_INIT_MAX_BYTES], resp[GSP_HS_RESP_BYTES];
	uint8_t msg[GSP_HS_INIT_MSG_MAX];
	size_t init_len;
	gsp_hs_init mi = {.version = 0x0100};
	gsp_hs_resp mr = {.version = 0x0100};
	size_t n, len;
	uint8_t flags = 0;

	memset(&hr, 0, sizeof(hr));
	memset(&scratch, 0, sizeof(scratch));
	if (size) {
		flags = data[0];
		data++;
		size--;
	}
	rng_calls = 0;
	cert_len = flags & 8 ? sizeof(cert) : 0;

	/* The genuine INIT, and the candidate. */
	if (gsp_hs_header_write(GSP_HS_INIT, mi.version, init_clear, GSP_HS_CLEAR) ||
	    gsp_hs_header_write(GSP_HS_RESP, mr.version, resp_clear, GSP_HS_CLEAR) ||
	    gsp_hs_initiate_cert(&hi, &initiator, responder.pub, init_clear,
				 timestamp, cert, cert_len, init, &init_len))
		abort();
	memcpy(mi.payload, init, init_len);
	mi.payload_len = (uint16_t)init_len;
	if (gsp_hs_init_encode(&mi, msg, sizeof(msg), &n) ||
	    n != GSP_HS_CLEAR + init_len)
		abort();
	uint8_t *c = candidate(&data, &size, flags & 1, msg, n, &len, flags & 8);
	if ((flags & 4) && len >= GSP_HS_INIT_MSG_BYTES && len <= GSP_HS_INIT_MSG_MAX)
		hs_spec_mac1_at(responder.pub, c, c + GSP_HS_CLEAR,
				len - GSP_HS_CLEAR - GSP_HS_MAC1, c + len - GSP_HS_MAC1);
	/* The raw bytes, any length, behind the genuine clear bytes. */
	read_init(&scratch, init_clear, c, len, init, init_len);
	int r = gsp_hs_init_decode(c, len, &mi);
	check_code(r);
	/* Decoded: its clear bytes as received (any minor decodes). */
	bool accepted = r == 0 &&
		read_init(&hr, c, mi.payload, mi.payload_len, init, init_len);
	free(c);
	if (!accepted && !read_init(&hr, init_clear, init, init_len, init, init_len))
		abort();
	/* An initiator never responds; a responder answers once. */
	if (gsp_hs_respond(&hi, resp_clear, resp, &sb) != -EINVAL)
		abort();
	if (gsp_hs_respond(&hr, resp_clear, resp, &sb) != 0)
		abort();

	/* The genuine RESPONSE, and the candidate. */
	memcpy(mr.payload, resp, sizeof(resp));
	if (gsp_hs_resp_encode(&mr, msg, sizeof(msg), &n) ||
	    n != GSP_HS_RESP_MSG_BYTES)
		abort();
	c = candidate(&data, &size, flags & 2, msg, n, &len, false);
	if (len != GSP_HS_RESP_BYTES) {
		/* Raw bytes of another length: refused before any crypto. */
		gsp_hs copy = hi;
		if (read_response(&copy, resp_clear, c, len, resp, &sa))
			abort();
	}
	r = gsp_hs_resp_decode(c, len, &mr);
	check_code(r);
	accepted = r == 0 &&
		read_response(&hi, c, mr.payload, sizeof(mr.payload), resp, &sa);
	free(c);
	if (!accepted &&
	    !read_response(&hi, resp_clear, resp, sizeof(resp), resp, &sa))
		abort();
	/* Done: the state is wiped and refuses a second RESPONSE. */
	if (!sodium_is_zero((const unsigned char *)&hi, sizeof(hi)) ||
	    gsp_hs_read_response(&hi, resp_clear, resp, sizeof(resp), &sa) != -EINVAL)
		abort();

	if (memcmp(sa.tx_key, sb.rx_key, 32) != 0 ||
	    memcmp(sa.rx_key, sb.tx_key, 32) != 0 ||
	    memcmp(sa.edge_seed, sb.edge_seed, 32) != 0 ||
	    memcmp(sa.peer, responder.pub, GSP_KEY_BYTES) != 0 ||
	    memcmp(sb.peer, initiator.pub, GSP_KEY_BYTES) != 0 ||
	    sa.tx_n || sa.rx_n || sb.tx_n || sb.rx_n)
		abort();
	gsp_session_clear(&sa);
	gsp_session_clear(&sb);
	return 0;
}
