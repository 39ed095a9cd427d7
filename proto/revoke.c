/* The authority's revocation list (see revoke.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "revoke.h"
#include "wire.h"


/* GSP_ADM_EUNSORTED or GSP_ADM_EDUPLICATE for keys[i - 1] vs keys[i]. */
static int pair_order(const uint8_t *prev, const uint8_t *key)
{
	int c = memcmp(prev, key, GSP_KEY_BYTES);

	return c < 0 ? 0 : c == 0 ? GSP_ADM_EDUPLICATE : GSP_ADM_EUNSORTED;
}

int gsp_revoke_check(const gsp_revoke *list)
{
	if (!list)
		return -EINVAL;
	if (list->version != GSP_REVOKE_VERSION)
		return GSP_ADM_EVERSION;
	if (list->count > GSP_REVOKE_MAX)
		return GSP_ADM_ETOOMANY;
	if (list->count && !list->keys)
		return -EINVAL;
	for (uint32_t i = 1; i < list->count; i++) {
		int r = pair_order(list->keys[i - 1], list->keys[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Everything but the signature, after room for the domain: the buffer
 * (to free) and the body's length, or NULL. */
static uint8_t *revoke_body(const gsp_revoke *l, size_t *ret_len)
{
	size_t d = strlen(GSP_REVOKE_DOMAIN);
	size_t n = GSP_REVOKE_BYTES(l->count) - GSP_SIGNATURE_BYTES;
	uint8_t *buf = malloc(d + n);
	wr w;

	if (!buf)
		return NULL;
	w.p = buf + d;
	wr_u8(&w, l->version);
	wr_bytes(&w, l->authority, GSP_SIGN_PUBLIC_BYTES);
	wr_u64(&w, l->serial);
	wr_u32(&w, l->count);
	wr_bytes(&w, l->keys, (size_t)l->count * GSP_KEY_BYTES);
	*ret_len = n;
	return buf;
}

/* Signs (sk) or verifies (pk) the list's body. */
static int revoke_sig(gsp_revoke *sign, const gsp_revoke *verify,
		      const uint8_t *key)
{
	const gsp_revoke *l = sign ? sign : verify;
	size_t d = strlen(GSP_REVOKE_DOMAIN), n;
	uint8_t *buf = revoke_body(l, &n);
	int r;

	if (!buf)
		return -ENOMEM;
	if (sign)
		r = gsp__admit_sign(GSP_REVOKE_DOMAIN, buf + d, n, buf, key, sign->sig);
	else
		r = gsp__admit_verify(GSP_REVOKE_DOMAIN, buf + d, n, buf, key,
				      verify->sig);
	free(buf);
	return r;
}

int gsp_revoke_sign(gsp_revoke *list,
		    const uint8_t ca_sk[static GSP_SIGN_SECRET_BYTES])
{
	if (gsp_revoke_check(list) < 0)
		return -EINVAL;
	crypto_sign_ed25519_sk_to_pk(list->authority, ca_sk);
	return revoke_sig(list, NULL, ca_sk);
}

int gsp_revoke_verify(const gsp_revoke *list,
		      const uint8_t authority[static GSP_SIGN_PUBLIC_BYTES])
{
	if (!authority || gsp_revoke_check(list) < 0)
		return -EINVAL;
	if (sodium_memcmp(list->authority, authority, GSP_SIGN_PUBLIC_BYTES) != 0)
		return -EKEYREJECTED;
	return revoke_sig(NULL, list, authority);
}

int gsp_revoke_encode(const gsp_revoke *list, uint8_t *buf, size_t cap,
		      size_t *ret_len)
{
	size_t need;
	wr w;
	int r;

	if (gsp_revoke_check(list) < 0)
		return -EINVAL;
	need = GSP_REVOKE_BYTES(list->count);
	r = room(buf, cap, need, ret_len);
	if (r < 0)
		return r;
	w.p = buf;
	wr_u8(&w, list->version);
	wr_bytes(&w, list->authority, GSP_SIGN_PUBLIC_BYTES);
	wr_u64(&w, list->serial);
	wr_u32(&w, list->count);
	wr_bytes(&w, list->keys, (size_t)list->count * GSP_KEY_BYTES);
	wr_bytes(&w, list->sig, GSP_SIGNATURE_BYTES);
	*ret_len = need;
	return 0;
}

int gsp_revoke_decode(const uint8_t *buf, size_t len, gsp_revoke *ret)
{
	const uint8_t *keys;
	gsp_revoke l;
	rd r;

	if (!ret)
		return -EINVAL;
	memset(&l, 0, sizeof(l));
	r = rd_init(buf, len);
	l.version = rd_u8(&r);
	if (r.bad)
		return GSP_ADM_ETRUNCATED;
	if (l.version != GSP_REVOKE_VERSION)
		return GSP_ADM_EVERSION;
	rd_copy(&r, l.authority, GSP_SIGN_PUBLIC_BYTES);
	l.serial = rd_u64(&r);
	l.count = rd_u32(&r);
	if (r.bad)
		return GSP_ADM_ETRUNCATED;
	/* The declared count against its cap, then against what the input
	 * holds, before anything is allocated for it. */
	if (l.count > GSP_REVOKE_MAX)
		return GSP_ADM_ETOOMANY;
	if (len < GSP_REVOKE_BYTES(l.count))
		return GSP_ADM_ETRUNCATED;
	if (len > GSP_REVOKE_BYTES(l.count))
		return GSP_ADM_ETRAILING;
	keys = rd_bytes(&r, (size_t)l.count * GSP_KEY_BYTES);
	rd_copy(&r, l.sig, GSP_SIGNATURE_BYTES);
	for (uint32_t i = 1; i < l.count; i++) {
		int e = pair_order(keys + (i - 1) * GSP_KEY_BYTES,
				   keys + i * GSP_KEY_BYTES);
		if (e < 0)
			return e;
	}
	if (l.count) {
		l.keys = malloc((size_t)l.count * GSP_KEY_BYTES);
		if (!l.keys)
			return -ENOMEM;
		memcpy(l.keys, keys, (size_t)l.count * GSP_KEY_BYTES);
	}
	*ret = l;
	return 0;
}

int gsp_revoke_to_text(const gsp_revoke *list, char *out, size_t cap)
{
	size_t n;
	uint8_t *bin;
	int r;

	if (gsp_revoke_check(list) < 0)
		return -EINVAL;
	bin = malloc(GSP_REVOKE_BYTES(list->count));
	if (!bin)
		return -ENOMEM;
	r = gsp_revoke_encode(list, bin, GSP_REVOKE_BYTES(list->count), &n);
	if (r == 0)
		r = gsp__admit_to_text(bin, n, out, cap);
	free(bin);
	return r;
}

int gsp_revoke_from_text(const char *text, size_t len, gsp_revoke *ret)
{
	size_t n;
	uint8_t *bin;
	int r;

	if (!text || !ret)
		return -EINVAL;
	/* The text's length bounds the bytes; the cap bounds the text. */
	if (len > GSP_REVOKE_TEXT_MAX)
		return GSP_ADM_ETRAILING;
	bin = malloc(len / 4 * 3 + 3);
	if (!bin)
		return -ENOMEM;
	r = gsp__admit_from_text(text, len, bin, len / 4 * 3 + 3, &n);
	if (r == 0)
		r = gsp_revoke_decode(bin, n, ret);
	free(bin);
	return r;
}

void gsp_revoke_clear(gsp_revoke *list)
{
	if (!list)
		return;
	free(list->keys);
	memset(list, 0, sizeof(*list));
}

bool gsp_revoke_contains(const gsp_revoke *list,
			 const uint8_t key[static GSP_KEY_BYTES])
{
	size_t lo = 0, hi;

	if (!list || !key || !list->keys)
		return false;
	hi = list->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(list->keys[mid], key, GSP_KEY_BYTES);
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}
