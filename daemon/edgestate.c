/* edgestate: the edges' records on disk (edgestate.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "edgestate.h"
#include "slotfile.h"

static const char magic[] = "gossipd edges v2\n";
static const char magic_v1[] = "gossipd edges v1\n";   /* no write count */
static const char magic_v3[] = "gossipd edges v3\n";   /* generations' state */
static const char magic_v4[] = "gossipd edges v4\n";   /* v3 and the owner */
#define MAGIC_LEN (sizeof(magic) - 1)
#define HEAD (GSP_KEY_BYTES + 4 + 1 + 8 + 4 + 8 + 32 + 4)
#define OWNER (GSP_FINGERPRINT_BYTES + 8 + 8)

static uint64_t get(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint8_t *put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + n;
}

/* One length-prefixed blob at *pos (u32 length, at most
 * EDGESTATE_MSG_MAX bytes). */
static int get_blob(const uint8_t *buf, size_t len, size_t *pos,
		    const uint8_t **ret, uint32_t *ret_len)
{
	if (len - *pos < 4)
		return -EBADMSG;
	uint32_t n = (uint32_t)get(buf + *pos, 4);
	*pos += 4;
	if (n > EDGESTATE_MSG_MAX || len - *pos < n)
		return -EBADMSG;
	*ret = n ? buf + *pos : NULL;
	*ret_len = n;
	*pos += n;
	return 0;
}

/* v3's tail of a record: f32 weight, the engine state, two kept ROUNDs. */
static int parse_state(const uint8_t *buf, size_t len, size_t *pos, edge_record *r)
{
	if (len - *pos < 4)
		return -EBADMSG;
	uint32_t w = (uint32_t)get(buf + *pos, 4);
	memcpy(&r->weight, &w, 4);
	*pos += 4;
	if (!(r->weight >= 0.0f && r->weight <= 1.0f))
		return -EBADMSG;
	if (get_blob(buf, len, pos, &r->engine, &r->engine_len) != 0)
		return -EBADMSG;
	for (int k = 0; k < 2; k++)
		if (get_blob(buf, len, pos, &r->kept[k], &r->kept_len[k]) != 0)
			return -EBADMSG;
	return 0;
}

static bool has_state(const edge_record *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].engine_len)
			return true;
	return false;
}

bool edgestate_owned_by(const edge_owner *records, const edge_owner *buffer)
{
	return !records->set ||
	       (buffer->set && records->dev == buffer->dev && records->ino == buffer->ino &&
		!memcmp(records->fingerprint, buffer->fingerprint, GSP_FINGERPRINT_BYTES));
}

bool edgestate_record_empty(const edge_record *r)
{
	return !r->generation && !r->ended_generation && !r->ended_applied &&
	       !r->msg_len && !r->engine_len;
}

int edgestate_parse(const uint8_t *buf, size_t len, edge_record *out,
		    uint64_t *ret_writes, edge_owner *ret_owner)
{
	bool v1 = len >= MAGIC_LEN && memcmp(buf, magic_v1, MAGIC_LEN) == 0;
	bool v4 = len >= MAGIC_LEN && memcmp(buf, magic_v4, MAGIC_LEN) == 0;
	bool v3 = v4 || (len >= MAGIC_LEN && memcmp(buf, magic_v3, MAGIC_LEN) == 0);
	size_t pos = MAGIC_LEN + (v1 ? 0 : 8) + (v4 ? OWNER : 0);
	if (len < pos + 4 || (!v1 && !v3 && memcmp(buf, magic, MAGIC_LEN) != 0))
		return -EBADMSG;
	uint64_t writes = v1 ? 0 : get(buf + MAGIC_LEN, 8);
	edge_owner owner = {.set = v4};
	if (v4) {
		const uint8_t *o = buf + MAGIC_LEN + 8;
		memcpy(owner.fingerprint, o, GSP_FINGERPRINT_BYTES);
		owner.dev = get(o + GSP_FINGERPRINT_BYTES, 8);
		owner.ino = get(o + GSP_FINGERPRINT_BYTES + 8, 8);
	}
	uint64_t n = get(buf + pos, 4);
	if (n > EDGESTATE_MAX)
		return -EBADMSG;
	pos += 4;
	for (uint64_t i = 0; i < n; i++) {
		if (len - pos < HEAD)
			return -EBADMSG;
		const uint8_t *p = buf + pos;
		edge_record *r = &out[i];
		memcpy(r->key, p, GSP_KEY_BYTES);
		p += GSP_KEY_BYTES;
		r->generation = (uint32_t)get(p, 4);
		uint8_t live = p[4];
		r->applied = get(p + 5, 8);
		r->ended_generation = (uint32_t)get(p + 13, 4);
		r->ended_applied = get(p + 17, 8);
		memcpy(r->seed, p + 25, 32);
		r->msg_len = (uint32_t)get(p + 57, 4);
		pos += HEAD;
		if (live > 1 || r->msg_len > EDGESTATE_MSG_MAX || len - pos < r->msg_len ||
		    r->ended_generation > r->generation ||
		    (live && r->generation == 0))
			return -EBADMSG;
		r->live = live;
		r->msg = r->msg_len ? buf + pos : NULL;
		pos += r->msg_len;
		r->weight = 0.0f;
		r->engine = r->kept[0] = r->kept[1] = NULL;
		r->engine_len = r->kept_len[0] = r->kept_len[1] = 0;
		if (v3 && parse_state(buf, len, &pos, r) != 0)
			return -EBADMSG;
	}
	if (pos != len)
		return -EBADMSG;
	if (ret_writes)
		*ret_writes = writes;
	if (ret_owner)
		*ret_owner = owner;
	return (int)n;
}

/* The file as pieces to write in order: its fixed fields, written into
 * one small buffer (heads), and the records' messages and states where
 * they are.  Saving writes them with no copy of the messages (a model's
 * exact ROUND is megabytes, and the records are saved at every STEP). */
typedef struct pieces {
	struct iovec *iov;
	size_t n;
	uint8_t *heads;
	uint8_t *mark;     /* heads not yet in iov start here */
	size_t len;        /* the file's bytes */
} pieces;

static void pieces_free(pieces *f)
{
	free(f->iov);
	free(f->heads);
}

static void piece(pieces *f, const void *b, size_t len)
{
	if (!len)
		return;
	f->iov[f->n++] = (struct iovec){.iov_base = (void *)b, .iov_len = len};
	f->len += len;
}

/* A blob's u32 length into the heads at p, then (if any) the heads up to
 * there and the blob b where it is. */
static uint8_t *len_blob(pieces *f, uint8_t *p, const uint8_t *b, uint32_t len)
{
	p = put(p, len, 4);
	if (len) {
		piece(f, f->mark, (size_t)(p - f->mark));
		piece(f, b, len);
		f->mark = p;
	}
	return p;
}

static int pieces_of(const edge_record *r, size_t n, uint64_t writes,
		     const edge_owner *owner, pieces *f)
{
	*f = (pieces){0};
	if (n > EDGESTATE_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (r[i].msg_len > EDGESTATE_MSG_MAX || r[i].engine_len > EDGESTATE_MSG_MAX ||
		    r[i].kept_len[0] > EDGESTATE_MSG_MAX || r[i].kept_len[1] > EDGESTATE_MSG_MAX)
			return -EINVAL;
	/* v4 with an owner; else v2 while no record carries a generation's
	 * state (older daemons read it), else v3. */
	bool v4 = owner && owner->set;
	bool v3 = v4 || has_state(r, n);
	size_t per = HEAD + (v3 ? 16 : 0);
	f->heads = malloc(MAGIC_LEN + 12 + OWNER + n * per);
	/* Each record: head, message, weight and length, engine state,
	 * length, kept, length, kept; and the last heads. */
	f->iov = malloc((1 + n * 8) * sizeof(*f->iov));
	if (!f->heads || !f->iov) {
		pieces_free(f);
		return -ENOMEM;
	}
	uint8_t *p = f->mark = f->heads;
	memcpy(p, v4 ? magic_v4 : v3 ? magic_v3 : magic, MAGIC_LEN);
	p = put(p + MAGIC_LEN, writes, 8);
	if (v4) {
		memcpy(p, owner->fingerprint, GSP_FINGERPRINT_BYTES);
		p = put(p + GSP_FINGERPRINT_BYTES, owner->dev, 8);
		p = put(p, owner->ino, 8);
	}
	p = put(p, n, 4);
	for (size_t i = 0; i < n; i++) {
		memcpy(p, r[i].key, GSP_KEY_BYTES);
		p = put(p + GSP_KEY_BYTES, r[i].generation, 4);
		*p++ = r[i].live;
		p = put(p, r[i].applied, 8);
		p = put(p, r[i].ended_generation, 4);
		p = put(p, r[i].ended_applied, 8);
		memcpy(p, r[i].seed, 32);
		p = len_blob(f, p + 32, r[i].msg, r[i].msg_len);
		if (!v3)
			continue;
		uint32_t w;
		memcpy(&w, &r[i].weight, 4);
		p = put(p, w, 4);
		p = len_blob(f, p, r[i].engine, r[i].engine_len);
		for (int k = 0; k < 2; k++)
			p = len_blob(f, p, r[i].kept[k], r[i].kept_len[k]);
	}
	piece(f, f->mark, (size_t)(p - f->mark));
	return 0;
}

int edgestate_encode(const edge_record *r, size_t n, uint64_t writes,
		     const edge_owner *owner, uint8_t **ret_buf, size_t *ret_len)
{
	pieces f;
	int rc = pieces_of(r, n, writes, owner, &f);
	if (rc)
		return rc;
	uint8_t *buf = malloc(f.len), *p = buf;
	for (size_t i = 0; buf && i < f.n; i++) {
		memcpy(p, f.iov[i].iov_base, f.iov[i].iov_len);
		p += f.iov[i].iov_len;
	}
	size_t len = f.len;
	pieces_free(&f);
	if (!buf)
		return -ENOMEM;
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

int edgestate_save(slotfile *file, const edge_record *r, size_t n,
		   uint64_t writes, const edge_owner *owner)
{
	pieces f;
	int rc = pieces_of(r, n, writes, owner, &f);
	if (rc)
		return rc;
	rc = slotfile_writev(file, f.iov, f.n);
	pieces_free(&f);
	return rc;
}
