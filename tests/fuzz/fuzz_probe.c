/*
 * libFuzzer harness for the failure detector's datagrams
 * (daemon/probe.c, probe_dgram_open()): a probe on a libuv loop (bound to
 * 127.0.0.1, never run) that probes one member of a fixed key.  An input
 * whose first byte is 0xFF is the rest sealed as that member's datagram
 * (so the search reaches the detector's message decoder behind the
 * authentication); any other input is a datagram as received.  The
 * decoder either refuses with -EBADMSG or -ENOENT, or accepts a message
 * that encodes back to at most SWIM_MSG_MAX bytes from the member's id.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uv_loop_t loop;
static probe self;
static gsp_keypair self_key, member_key;
static uint8_t tx[crypto_kx_SESSIONKEYBYTES];

static void on_verdict(void *ctx, const uint8_t key[GSP_KEY_BYTES], bool dead)
{
	(void)ctx, (void)key, (void)dead;
}

static const probe_ops ops = {.verdict = on_verdict};

static void init(void)
{
	static const uint8_t s1[crypto_box_SEEDBYTES] = {1}, s2[crypto_box_SEEDBYTES] = {2};
	char err[128];
	uint8_t rx[crypto_kx_SESSIONKEYBYTES];
	if (sodium_init() < 0 || uv_loop_init(&loop) != 0)
		abort();
	crypto_box_seed_keypair(self_key.pub, self_key.priv, s1);
	crypto_box_seed_keypair(member_key.pub, member_key.priv, s2);
	if (probe_start(&self, &loop, &self_key, "127.0.0.1:0", 1, &ops, NULL, err,
			sizeof(err)) != 0)
		abort();
	gsp_member_endpoint ep = {.family = 4, .addr = {127, 0, 0, 1}, .port = 9};
	probe_sync_begin(&self);
	probe_member_set(&self, member_key.pub, &ep, 1);
	probe_sync_end(&self);
	/* The member's key towards us. */
	int r = memcmp(member_key.pub, self_key.pub, GSP_KEY_BYTES) < 0
			? crypto_kx_client_session_keys(rx, tx, member_key.pub, member_key.priv,
							self_key.pub)
			: crypto_kx_server_session_keys(rx, tx, member_key.pub, member_key.priv,
							self_key.pub);
	if (r != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	uint8_t dgram[PROBE_DGRAM_MAX + 64];
	const uint8_t *in = data;
	size_t len = size;
	swim_msg m;
	uint32_t id;

	if (!ready) {
		init();
		ready = true;
	}
	if (size >= 1 && data[0] == 0xFF && size - 1 <= SWIM_MSG_MAX + 32) {
		unsigned long long clen;
		dgram[0] = PROBE_DGRAM_TYPE;
		dgram[1] = PROBE_DGRAM_VERSION;
		memcpy(dgram + 2, member_key.pub, GSP_KEY_BYTES);
		memset(dgram + PROBE_DGRAM_HEAD, 7, PROBE_DGRAM_NONCE);
		crypto_aead_xchacha20poly1305_ietf_encrypt(dgram + PROBE_DGRAM_HEAD + PROBE_DGRAM_NONCE,
							   &clen, data + 1, size - 1, dgram,
							   PROBE_DGRAM_HEAD, NULL,
							   dgram + PROBE_DGRAM_HEAD, tx);
		in = dgram;
		len = PROBE_DGRAM_HEAD + PROBE_DGRAM_NONCE + clen;
	}
	int r = probe_dgram_open(&self, in, len, &id, &m);
	if (r == -EBADMSG || r == -ENOENT)
		return 0;
	uint8_t again[SWIM_MSG_MAX];
	size_t n;
	if (r != 0 || id != probe_id(member_key.pub) ||
	    swim_msg_encode(&m, again, sizeof(again), &n) != 0 || n > SWIM_MSG_MAX)
		abort();
	return 0;
}
