/* Member certificates (see cert.h). */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "cert.h"
#include "wire.h"

_Static_assert(GSP_CERT_MAX <= 256, "a certificate fits in 256 bytes");
_Static_assert(sodium_base64_ENCODED_LEN(GSP_CERT_MAX,
					 sodium_base64_VARIANT_ORIGINAL) ==
	       GSP_CERT_TEXT_MAX + 1, "the longest certificate's text");

/* A-Z a-z 0-9 . _ -, without the locale. */
static bool name_char(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

static int name_check(const uint8_t *name, size_t len)
{
	if (len == 0 || len > GSP_CERT_NAME_MAX)
		return GSP_ADM_ENAMELEN;
	for (size_t i = 0; i < len; i++)
		if (!name_char(name[i]))
			return GSP_ADM_ENAMECHAR;
	return 0;
}

int gsp_cert_check(const gsp_cert *cert)
{
	int r;

	if (!cert)
		return -EINVAL;
	if (cert->version != GSP_CERT_VERSION)
		return GSP_ADM_EVERSION;
	r = name_check((const uint8_t *)cert->name, cert->name_len);
	if (r < 0)
		return r;
	return cert->not_after > cert->not_before ? 0 : GSP_ADM_EVALIDITY;
}

/* Everything but the signature into out (GSP_CERT_MAX bytes): its length. */
static size_t cert_body(const gsp_cert *c, uint8_t *out)
{
	wr w = { out };

	wr_u8(&w, c->version);
	wr_bytes(&w, c->node_key, GSP_KEY_BYTES);
	wr_bytes(&w, c->sign_key, GSP_SIGN_PUBLIC_BYTES);
	wr_u8(&w, c->name_len);
	wr_bytes(&w, c->name, c->name_len);
	wr_u64(&w, c->not_before);
	wr_u64(&w, c->not_after);
	wr_bytes(&w, c->authority, GSP_SIGN_PUBLIC_BYTES);
	return (size_t)(w.p - out);
}

int gsp_cert_sign(gsp_cert *cert, const uint8_t ca_sk[static GSP_SIGN_SECRET_BYTES])
{
	uint8_t body[sizeof(GSP_CERT_DOMAIN) + GSP_CERT_MAX];
	size_t n;

	if (gsp_cert_check(cert) < 0)
		return -EINVAL;
	crypto_sign_ed25519_sk_to_pk(cert->authority, ca_sk);
	n = cert_body(cert, body);
	return gsp__admit_sign(GSP_CERT_DOMAIN, body, n, body, ca_sk, cert->sig);
}

int gsp_cert_encode(const gsp_cert *cert, uint8_t *buf, size_t cap,
		    size_t *ret_len)
{
	size_t need;
	int r;

	if (gsp_cert_check(cert) < 0)
		return -EINVAL;
	need = GSP_CERT_FIXED + cert->name_len;
	r = room(buf, cap, need, ret_len);
	if (r < 0)
		return r;
	memcpy(buf + cert_body(cert, buf), cert->sig, GSP_SIGNATURE_BYTES);
	*ret_len = need;
	return 0;
}

int gsp_cert_decode(const uint8_t *buf, size_t len, gsp_cert *ret)
{
	const uint8_t *name;
	gsp_cert c;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	memset(&c, 0, sizeof(c));
	r = rd_init(buf, len);
	c.version = rd_u8(&r);
	if (r.bad)
		return GSP_ADM_ETRUNCATED;
	if (c.version != GSP_CERT_VERSION)
		return GSP_ADM_EVERSION;
	rd_copy(&r, c.node_key, GSP_KEY_BYTES);
	rd_copy(&r, c.sign_key, GSP_SIGN_PUBLIC_BYTES);
	c.name_len = rd_u8(&r);
	if (r.bad)
		return GSP_ADM_ETRUNCATED;
	if (c.name_len == 0 || c.name_len > GSP_CERT_NAME_MAX)
		return GSP_ADM_ENAMELEN;
	name = rd_bytes(&r, c.name_len);
	if (!name)
		return GSP_ADM_ETRUNCATED;
	err = name_check(name, c.name_len);
	if (err < 0)
		return err;
	memcpy(c.name, name, c.name_len);
	c.not_before = rd_u64(&r);
	c.not_after = rd_u64(&r);
	rd_copy(&r, c.authority, GSP_SIGN_PUBLIC_BYTES);
	rd_copy(&r, c.sig, GSP_SIGNATURE_BYTES);
	if (r.bad)
		return GSP_ADM_ETRUNCATED;
	if (r.left)
		return GSP_ADM_ETRAILING;
	if (c.not_after <= c.not_before)
		return GSP_ADM_EVALIDITY;
	*ret = c;
	return 0;
}

int gsp_cert_to_text(const gsp_cert *cert, char *out, size_t cap)
{
	uint8_t bin[GSP_CERT_MAX];
	size_t n;
	int r = gsp_cert_encode(cert, bin, sizeof(bin), &n);

	if (r < 0)
		return r;
	return gsp__admit_to_text(bin, n, out, cap);
}

int gsp_cert_from_text(const char *text, size_t len, gsp_cert *ret)
{
	uint8_t bin[GSP_CERT_MAX];
	size_t n;
	int r;

	if (!ret)
		return -EINVAL;
	r = gsp__admit_from_text(text, len, bin, sizeof(bin), &n);
	if (r < 0)
		return r;
	return gsp_cert_decode(bin, n, ret);
}

int gsp_cert_verify(const gsp_cert *cert,
		    const uint8_t authority[static GSP_SIGN_PUBLIC_BYTES],
		    uint64_t now, const gsp_revoke *revoked)
{
	uint8_t body[sizeof(GSP_CERT_DOMAIN) + GSP_CERT_MAX];
	size_t n;
	int r;

	if (!cert || !authority || gsp_cert_check(cert) < 0)
		return -EINVAL;
	if (revoked && sodium_memcmp(revoked->authority, authority,
				     GSP_SIGN_PUBLIC_BYTES) != 0)
		return -EINVAL;
	if (sodium_memcmp(cert->authority, authority, GSP_SIGN_PUBLIC_BYTES) != 0)
		return -EKEYREJECTED;
	n = cert_body(cert, body);
	r = gsp__admit_verify(GSP_CERT_DOMAIN, body, n, body, authority, cert->sig);
	if (r < 0)
		return r;
	if (now < cert->not_before)
		return GSP_ADM_ENOTYET;
	if (now >= cert->not_after)
		return -EKEYEXPIRED;
	if (revoked && gsp_revoke_contains(revoked, cert->node_key))
		return -EKEYREVOKED;
	return 0;
}
