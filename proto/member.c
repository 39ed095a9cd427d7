/* Signed member records (see member.h). */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "member.h"
#include "wire.h"

_Static_assert(GSP_MEMBER_MAX <= 1024, "a record with its certificate fits in 1 KiB");
_Static_assert(sizeof(GSP_MEMBER_SIGN_KDF) - 1 >= crypto_generichash_KEYBYTES_MIN &&
	       sizeof(GSP_MEMBER_SIGN_KDF) - 1 <= crypto_generichash_KEYBYTES_MAX,
	       "the derivation's domain string is a BLAKE2b key");

const char *gsp_member_status_name(unsigned status)
{
	static const char *const names[] = { "alive", "suspect", "dead", "left" };

	return status < sizeof(names) / sizeof(names[0]) ? names[status] : NULL;
}

void gsp_member_signing_key(const uint8_t priv[static GSP_KEY_BYTES],
			    uint8_t ret_pk[static GSP_SIGN_PUBLIC_BYTES],
			    uint8_t ret_sk[static GSP_SIGN_SECRET_BYTES])
{
	uint8_t seed[GSP_SIGN_SEED_BYTES];

	crypto_generichash(seed, sizeof(seed), priv, GSP_KEY_BYTES,
			   (const uint8_t *)GSP_MEMBER_SIGN_KDF,
			   sizeof(GSP_MEMBER_SIGN_KDF) - 1);
	crypto_sign_seed_keypair(ret_pk, ret_sk, seed);
	sodium_memzero(seed, sizeof(seed));
}

static size_t addr_len(uint8_t family)
{
	return family == 4 ? 4 : 16;
}

static int endpoint_check(const gsp_member_endpoint *e)
{
	static const uint8_t zero[12];

	if (e->family != 4 && e->family != 6)
		return GSP_ADM_EFAMILY;
	if (e->family == 4 && memcmp(e->addr + 4, zero, sizeof(zero)) != 0)
		return GSP_ADM_EFAMILY;
	return e->port ? 0 : GSP_ADM_EPORT;
}

/* The embedded certificate names the record's keys. */
static bool cert_keys_match(const gsp_member *m)
{
	return sodium_memcmp(m->cert.node_key, m->node_key, GSP_KEY_BYTES) == 0 &&
	       sodium_memcmp(m->cert.sign_key, m->sign_key, GSP_SIGN_PUBLIC_BYTES) == 0;
}

int gsp_member_check(const gsp_member *rec)
{
	int r;

	if (!rec)
		return -EINVAL;
	if (rec->version != GSP_MEMBER_VERSION)
		return GSP_ADM_EVERSION;
	if (rec->status > GSP_MEMBER_LEFT)
		return GSP_ADM_ESTATUS;
	if (rec->n_endpoints > GSP_MEMBER_ENDPOINTS_MAX)
		return GSP_ADM_ETOOMANY;
	for (unsigned i = 0; i < rec->n_endpoints; i++) {
		r = endpoint_check(&rec->endpoints[i]);
		if (r < 0)
			return r;
	}
	if (!rec->has_cert)
		return 0;
	r = gsp_cert_check(&rec->cert);
	if (r < 0)
		return r;
	return cert_keys_match(rec) ? 0 : GSP_ADM_ECERTKEY;
}

/* Everything but the signature into out (GSP_MEMBER_MAX bytes). */
static size_t member_body(const gsp_member *m, uint8_t *out)
{
	wr w = { out };
	size_t n = 0;

	wr_u8(&w, m->version);
	wr_bytes(&w, m->node_key, GSP_KEY_BYTES);
	wr_bytes(&w, m->sign_key, GSP_SIGN_PUBLIC_BYTES);
	wr_u64(&w, m->incarnation);
	wr_u8(&w, m->status);
	wr_u8(&w, m->n_endpoints);
	for (unsigned i = 0; i < m->n_endpoints; i++) {
		const gsp_member_endpoint *e = &m->endpoints[i];
		wr_u8(&w, e->family);
		wr_bytes(&w, e->addr, addr_len(e->family));
		wr_u16(&w, e->port);
	}
	/* The certificate in place, after its length. */
	if (m->has_cert && gsp_cert_encode(&m->cert, w.p + 2, GSP_CERT_MAX, &n) < 0)
		n = 0;   /* not reached: the callers checked the record */
	wr_u16(&w, (uint16_t)n);
	w.p += n;
	return (size_t)(w.p - out);
}

int gsp_member_sign(gsp_member *rec, const uint8_t sk[static GSP_SIGN_SECRET_BYTES])
{
	uint8_t body[sizeof(GSP_MEMBER_DOMAIN) + GSP_MEMBER_MAX];
	gsp_member m;
	size_t n;
	int r;

	if (!rec)
		return -EINVAL;
	m = *rec;
	crypto_sign_ed25519_sk_to_pk(m.sign_key, sk);
	if (gsp_member_check(&m) < 0)
		return -EINVAL;
	n = member_body(&m, body);
	r = gsp__admit_sign(GSP_MEMBER_DOMAIN, body, n, body, sk, m.sig);
	if (r == 0)
		*rec = m;
	return r;
}

int gsp_member_encode(const gsp_member *rec, uint8_t *buf, size_t cap,
		      size_t *ret_len)
{
	uint8_t body[GSP_MEMBER_MAX];
	size_t n;
	int r;

	if (gsp_member_check(rec) < 0)
		return -EINVAL;
	n = member_body(rec, body);
	r = room(buf, cap, n + GSP_SIGNATURE_BYTES, ret_len);
	if (r < 0)
		return r;
	memcpy(buf, body, n);
	memcpy(buf + n, rec->sig, GSP_SIGNATURE_BYTES);
	*ret_len = n + GSP_SIGNATURE_BYTES;
	return 0;
}

static int decode_endpoint(rd *r, gsp_member_endpoint *e)
{
	e->family = rd_u8(r);
	if (r->bad)
		return GSP_ADM_ETRUNCATED;
	if (e->family != 4 && e->family != 6)
		return GSP_ADM_EFAMILY;
	rd_copy(r, e->addr, addr_len(e->family));
	e->port = rd_u16(r);
	if (r->bad)
		return GSP_ADM_ETRUNCATED;
	return e->port ? 0 : GSP_ADM_EPORT;
}

static int decode_cert(rd *r, gsp_member *m)
{
	uint16_t len = rd_u16(r);
	const uint8_t *p;
	int err;

	if (r->bad)
		return GSP_ADM_ETRUNCATED;
	if (len == 0)
		return 0;
	if (len < GSP_CERT_MIN || len > GSP_CERT_MAX)
		return GSP_ADM_ECERTLEN;
	p = rd_bytes(r, len);
	if (!p)
		return GSP_ADM_ETRUNCATED;
	err = gsp_cert_decode(p, len, &m->cert);
	/* The certificate's own end disagrees with cert_len. */
	if (err == GSP_ADM_ETRUNCATED || err == GSP_ADM_ETRAILING)
		return GSP_ADM_ECERTLEN;
	if (err < 0)
		return err;
	m->has_cert = true;
	return cert_keys_match(m) ? 0 : GSP_ADM_ECERTKEY;
}

int gsp_member_decode(const uint8_t *buf, size_t len, gsp_member *ret)
{
	gsp_member m;
	rd r;
	int err;

	if (!ret)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	r = rd_init(buf, len);
	m.version = rd_u8(&r);
	if (r.bad)
		return GSP_ADM_ETRUNCATED;
	if (m.version != GSP_MEMBER_VERSION)
		return GSP_ADM_EVERSION;
	rd_copy(&r, m.node_key, GSP_KEY_BYTES);
	rd_copy(&r, m.sign_key, GSP_SIGN_PUBLIC_BYTES);
	m.incarnation = rd_u64(&r);
	m.status = rd_u8(&r);
	m.n_endpoints = rd_u8(&r);
	if (r.bad)
		return GSP_ADM_ETRUNCATED;
	if (m.status > GSP_MEMBER_LEFT)
		return GSP_ADM_ESTATUS;
	if (m.n_endpoints > GSP_MEMBER_ENDPOINTS_MAX)
		return GSP_ADM_ETOOMANY;
	for (unsigned i = 0; i < m.n_endpoints; i++) {
		err = decode_endpoint(&r, &m.endpoints[i]);
		if (err < 0)
			return err;
	}
	err = decode_cert(&r, &m);
	if (err < 0)
		return err;
	rd_copy(&r, m.sig, GSP_SIGNATURE_BYTES);
	if (r.bad)
		return GSP_ADM_ETRUNCATED;
	if (r.left)
		return GSP_ADM_ETRAILING;
	*ret = m;
	return 0;
}

int gsp_member_verify(const gsp_member *rec, const uint8_t *authority,
		      uint64_t now, const gsp_revoke *revoked)
{
	uint8_t body[sizeof(GSP_MEMBER_DOMAIN) + GSP_MEMBER_MAX];
	size_t n;
	int r;

	if (gsp_member_check(rec) < 0)
		return -EINVAL;
	n = member_body(rec, body);
	r = gsp__admit_verify(GSP_MEMBER_DOMAIN, body, n, body, rec->sign_key,
			      rec->sig);
	if (r < 0 || !authority)
		return r;
	if (!rec->has_cert)
		return GSP_ADM_ENOCERT;
	return gsp_cert_verify(&rec->cert, authority, now, revoked);
}

int gsp_member_newer(const gsp_member *a, const gsp_member *b)
{
	if (a->incarnation != b->incarnation)
		return a->incarnation > b->incarnation ? 1 : -1;
	if (a->status != b->status)
		return a->status > b->status ? 1 : -1;
	return 0;
}
