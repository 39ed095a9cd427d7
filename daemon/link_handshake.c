/* link: the handshake messages of a link (PROTOCOL.md 4.2): HS_INIT from
 * the initiator (with our certificate, if we have one), the responder's
 * authorization and HS_RESP, a keyless dialer's HS_WHO and the
 * responder's HS_CERT, and refusals of another protocol version.  Each message's clear type and version
 * bytes go into the handshake hash.  It calls only link_core.c, below it
 * in the module's order (link_impl.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "link_impl.h"
#include "log.h"
#include "proto.h"

/* A handshake message that did not decode: another major version, or
 * another minor whose handshake has another size (1.3 added mac1), is a
 * policy reject (PROTOCOL.md 3: logged, counted as version_mismatch,
 * closed without a reply), anything else malformed. */
static int version_refused(plink *l, const uint8_t *body, size_t len, int err,
			   char *why, size_t why_len)
{
	uint16_t v;
	if (gsp_proto_version_of(body, len, &v) != 0 ||
	    (err != -EPROTONOSUPPORT && v == GSP_PROTO_VERSION))
		return err;
	l->env->counters->version_mismatch++;
	snprintf(why, why_len, "handshake refused: it speaks protocol %u.%u, we %u.%u",
		 v >> 8, v & 0xff, GSP_PROTO_VERSION >> 8, GSP_PROTO_VERSION & 0xff);
	link_preauth_warn(l, "%s", why);
	return -EACCES;
}

_Static_assert(GSP_HS_CLEAR == GSP_HS_HEADER_BYTES, "handshake clear bytes");
_Static_assert(GSP_HS_INIT_PAYLOAD == GSP_HS_INIT_BYTES &&
	       GSP_HS_INIT_PAYLOAD_MAX == GSP_HS_INIT_MAX_BYTES &&
	       GSP_HS_RESP_PAYLOAD == GSP_HS_RESP_BYTES, "handshake payloads");
_Static_assert(GSP_HS_INIT_MSG_MAX <= GSP_PROTO_PREAUTH_MAX &&
	       GSP_HS_CERT_MSG_MAX <= GSP_PROTO_PREAUTH_MAX, "pre-auth cap");

/* A handshake message that did not authenticate.  If it announced
 * another minor version, that is the likelier cause (an older gossipd,
 * or a version rewritten in flight: the hash covers it), and is counted
 * as version_mismatch; else as hs_refused. */
static void hs_auth_failed(plink *l, uint16_t version, char *why, size_t why_len)
{
	const char *what = l->initiator ? "handshake response" : "HS_INIT";
	if (version != GSP_PROTO_VERSION) {
		l->env->counters->version_mismatch++;
		snprintf(why, why_len, "%s does not authenticate: it announces protocol "
			 "%u.%u, we %u.%u (the handshake covers the version)", what,
			 version >> 8, version & 0xff, GSP_PROTO_VERSION >> 8,
			 GSP_PROTO_VERSION & 0xff);
	} else {
		l->env->counters->hs_refused++;
		snprintf(why, why_len, "%s does not authenticate (%s)", what,
			 l->initiator ? "is its PublicKey right?"
				      : "it does not decrypt with our key");
	}
	if (l->initiator)
		gsp_warn("peer %s: %s", l->name, why);
	else
		link_preauth_warn(l, "handshake refused: %s", why);
}

static int on_hs_init(plink *l, const uint8_t *body, size_t len, char *why,
		      size_t why_len)
{
	gsp_hs_init msg;
	uint8_t peer_key[GSP_KEY_BYTES], ts[GSP_TAI64N_BYTES], cert[GSP_CERT_MAX];
	size_t cert_len = 0;
	int err = gsp_hs_init_decode(body, len, &msg);
	if (err)
		return version_refused(l, body, len, err, why, why_len);
	err = gsp_hs_read_init_cert(&l->hs, l->env->key, body, msg.payload,
				    msg.payload_len, peer_key, ts, cert, &cert_len);
	if (err == -EPERM && msg.version == GSP_PROTO_VERSION) {
		/* Refused before any Diffie-Hellman (PROTOCOL.md 4.2). */
		l->env->counters->hs_mac1_bad++;
		snprintf(why, why_len, "HS_INIT's mac1 does not match our public key "
			 "(the sender does not know it, or the message was changed)");
		link_preauth_warn(l, "handshake refused: %s", why);
		return -EACCES;
	}
	if (err) {
		hs_auth_failed(l, msg.version, why, why_len);
		return -EACCES;
	}
	if ((err = l->env->ops->authorize(l, peer_key, ts, cert, cert_len)) != 0)
		return err;
	gsp_hs_resp resp = {.version = GSP_PROTO_VERSION};
	uint8_t out[GSP_HS_RESP_MSG_BYTES];
	size_t n;
	if (gsp_hs_header_write(GSP_HS_RESP, resp.version, out, sizeof(out)) != 0 ||
	    gsp_hs_respond(&l->hs, out, resp.payload, &l->sess) != 0 ||
	    gsp_hs_resp_encode(&resp, out, sizeof(out), &n) != 0)
		return -EPROTO;
	if ((err = link__send_clear(l, out, n)) != 0)
		return err;
	/* Not up until the initiator proves it holds the keys (its first
	 * transport frame): a replayed HS_INIT displaces nothing. */
	l->confirming = true;
	link_set_max_frame(l, GSP_PROTO_CONTROL_MAX);
	return 0;
}

static int on_hs_resp(plink *l, const uint8_t *body, size_t len, char *why,
		      size_t why_len)
{
	gsp_hs_resp msg;
	int err = gsp_hs_resp_decode(body, len, &msg);
	if (err)
		return version_refused(l, body, len, err, why, why_len);
	if (gsp_hs_read_response(&l->hs, body, msg.payload, sizeof(msg.payload),
				 &l->sess) != 0) {
		hs_auth_failed(l, msg.version, why, why_len);
		return -EACCES;
	}
	link__opened(l);
	/* Confirms the session to the responder at once (a PING is the
	 * smallest transport frame). */
	link__ping(l);
	return 0;
}

/* Responder: a keyless dialer asks who we are (once per connection):
 * our certificate, or, without one, a refusal without an answer. */
static int on_hs_who(plink *l, const uint8_t *body, size_t len, char *why,
		     size_t why_len)
{
	uint16_t version;
	uint8_t out[GSP_HS_CERT_MSG_MAX];
	size_t n;
	int err = gsp_hs_who_decode(body, len, &version);
	if (err)
		return version_refused(l, body, len, err, why, why_len);
	if (version != GSP_PROTO_VERSION)
		return version_refused(l, body, len, -EPROTONOSUPPORT, why, why_len);
	if (!l->env->cert_len) {
		l->env->counters->hs_who_refused++;
		snprintf(why, why_len, "HS_WHO: this node has no certificate to show "
			 "(a dialer without our key needs [Cluster] Certificate)");
		link_preauth_warn(l, "handshake refused: %s", why);
		return -EACCES;
	}
	gsp_hs_cert msg = {.version = GSP_PROTO_VERSION,
			   .cert_len = (uint16_t)l->env->cert_len,
			   .cert = l->env->cert};
	if (gsp_hs_cert_encode(&msg, out, sizeof(out), &n) != 0)
		return -EPROTO;
	l->hs_wait = LINK_WAIT_INIT;
	return link__send_clear(l, out, n);
}

/* Initiator: HS_INIT, with our certificate if we have one. */
static int send_init(plink *l)
{
	uint8_t ts[GSP_TAI64N_BYTES], init[GSP_HS_INIT_MSG_MAX];
	gsp_hs_init msg = {.version = GSP_PROTO_VERSION};
	size_t n, plen;
	gsp_hs_timestamp(ts);
	int err = gsp_hs_header_write(GSP_HS_INIT, msg.version, init, sizeof(init));
	if (!err)
		err = gsp_hs_initiate_cert(&l->hs, l->env->key, l->remote_key, init,
					   ts, l->env->cert, l->env->cert_len,
					   msg.payload, &plen);
	msg.payload_len = (uint16_t)plen;
	if (!err)
		err = gsp_hs_init_encode(&msg, init, sizeof(init), &n);
	l->hs_wait = LINK_WAIT_RESP;
	return err ? err : link__send_clear(l, init, n);
}

/* Initiator, keyless: the responder's certificate; the owner verifies
 * it and gives the key it names, and HS_INIT follows at once. */
static int on_hs_cert(plink *l, const uint8_t *body, size_t len, char *why,
		      size_t why_len)
{
	gsp_hs_cert msg;
	uint8_t key[GSP_KEY_BYTES];
	int err = gsp_hs_cert_decode(body, len, &msg);
	if (err)
		return version_refused(l, body, len, err, why, why_len);
	if (msg.version != GSP_PROTO_VERSION)
		return version_refused(l, body, len, -EPROTONOSUPPORT, why, why_len);
	if (!l->env->ops->learn)
		return -EACCES;
	if ((err = l->env->ops->learn(l, msg.cert, msg.cert_len, key)) != 0) {
		snprintf(why, why_len, "its certificate does not admit it");
		return err;
	}
	memcpy(l->remote_key, key, GSP_KEY_BYTES);
	return send_init(l);
}

/* Initiator, once connected: HS_INIT, or HS_WHO without the key. */
int link__hs_initiate(plink *l)
{
	uint8_t who[GSP_HS_WHO_MSG_BYTES];
	if (l->hs_wait != LINK_WAIT_CERT)
		return send_init(l);
	int err = gsp_hs_header_write(GSP_HS_WHO, GSP_PROTO_VERSION, who, sizeof(who));
	return err ? err : link__send_clear(l, who, sizeof(who));
}

int link__hs_frame(plink *l, const uint8_t *body, size_t len, char *why,
		   size_t why_len)
{
	switch (l->hs_wait) {
	case LINK_WAIT_RESP:
		return on_hs_resp(l, body, len, why, why_len);
	case LINK_WAIT_CERT:
		return on_hs_cert(l, body, len, why, why_len);
	case LINK_WAIT_WHO_OR_INIT:
		if (len && body[0] == GSP_HS_WHO)
			return on_hs_who(l, body, len, why, why_len);
		return on_hs_init(l, body, len, why, why_len);
	case LINK_WAIT_INIT:
		break;
	}
	return on_hs_init(l, body, len, why, why_len);
}
