/* api_request: the local API's requests (PROTOCOL.md 5): HELLO,
 * REGISTER, STEP, AVERAGE, FETCH, STATUS, DETACH and LEAVE decoded and handed to the
 * model and the stepper, and their one reply each (api.h; the server and
 * its connections: api.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_impl.h"
#include "log.h"
#include "status.h"
#include "text.h"

/* A STEP, DRAIN or AVERAGE ended (step.h). */
static void on_step_done(void *client, const step_result *r)
{
	api_client *c = client;
	uint8_t buf[128];
	size_t n;
	int err;
	if (r->err) {
		api__reply_error(c, r->err, r->text);
		return;
	}
	err = r->average ? gsp_api_average_ok_encode(&r->avg, buf, sizeof(buf), &n)
			 : gsp_api_step_ok_encode(&r->step, buf, sizeof(buf), &n);
	if (!err)
		api__reply(c, buf, n);
	else
		api__reply_error(c, err, gsp_strerror(err));
}

static void on_detached(void *client)
{
	api__reply_ok(client);
}

/* Requests that need the model and must come from its owner. */
static int owner_check(api_client *c)
{
	if (!c->d->model.registered) {
		api__reply_error(c, -ENOENT, "no model registered");
		return -1;
	}
	if (!model_owned_by(&c->d->model, c)) {
		api__reply_error(c, -EPERM, "the model belongs to another connection");
		return -1;
	}
	return 0;
}

static bool grouped(const api_client *c)
{
	return c->d->model.mode == MODEL_GROUP;
}

static void started(api_client *c, int err)
{
	if (err == -EBUSY)
		api__reply_error(c, err, "a request is already in progress");
	else if (err == -EOPNOTSUPP)
		api__reply_error(c, err, "DRAIN and AVERAGE are not implemented for a "
				 "local group of more than one trainer: STEP only");
	else if (err)
		api__reply_error(c, err, gsp_strerror(err));
}

static int on_hello(api_client *c, const uint8_t *body, size_t len)
{
	gsp_api_hello h;
	int err = gsp_api_hello_decode(body, len, &h);
	if (err)
		return err;
	snprintf(c->name, sizeof(c->name), "%.*s", (int)h.name_len, h.name);
	text_escape(h.name, h.name_len, c->log_name, sizeof(c->log_name));
	c->hello = true;
	uint8_t buf[256];
	size_t n;
	gsp_api_hello ok = {.version = GSP_PROTO_VERSION, .name = GSP_VERSION,
			    .name_len = strlen(GSP_VERSION)};
	if (gsp_api_hello_ok_encode(&ok, buf, sizeof(buf), &n) == 0)
		api__reply(c, buf, n);
	return 0;
}

/* REGISTER: the passed fd goes to model_register whatever happens. */
static int on_register(api_client *c, const uint8_t *body, size_t len)
{
	gossipd *d = c->d;
	char text[256];
	int fd = c->passed_fd;
	c->passed_fd = -1;
	int err = model_register(&d->model, c, c->name, body, len, fd, text,
				 sizeof(text));
	if (err == -EBADMSG)
		return err;            /* malformed: one reply, by the caller */
	if (err) {
		gsp_warn("REGISTER from '%s' refused: %s", c->log_name, text);
		api__reply_error(c, err, text);
		return 0;
	}
	api__reply_ok(c);
	return 0;
}

/* FETCH ended (fetch.h). */
static void on_fetched(void *client, const fetch_result *r)
{
	api_client *c = client;
	uint8_t buf[128];
	size_t n;
	if (r->err) {
		api__reply_error(c, r->err, r->text);
		return;
	}
	gsp_api_fetch_ok ok = {.bytes = r->bytes, .took_ms = r->took_ms, .peer = r->peer,
			       .peer_len = strlen(r->peer)};
	if (gsp_api_fetch_ok_encode(&ok, buf, sizeof(buf), &n) == 0)
		api__reply(c, buf, n);
	else
		api__reply_error(c, -EINVAL, "FETCH_OK does not encode");
}

static int on_fetch(api_client *c, const uint8_t *body, size_t len)
{
	gsp_api_fetch f;
	int err = gsp_api_fetch_decode(body, len, &f);
	if (err)
		return err;
	if (owner_check(c))
		return 0;
	if (core_busy(&c->d->step.core)) {
		api__reply_error(c, -EBUSY, "a request is already in progress");
		return 0;
	}
	err = fetch_start(&c->d->fetch, c, f.time_limit_ms, on_fetched);
	if (err == -EOPNOTSUPP)
		api__reply_error(c, err, "FETCH is not implemented for a local group");
	else if (err == -EBUSY)
		api__reply_error(c, err, "a FETCH is already in progress");
	else if (err)
		api__reply_error(c, err, gsp_strerror(err));
	return 0;
}

static int on_status(api_client *c, const uint8_t *body, size_t len)
{
	gossipd *d = c->d;
	int err = gsp_api_status_decode(body, len);
	if (err)
		return err;
	if (!core_busy(&d->step.core))
		edges_cache(&d->mesh.edges);
	char *json = status_json(d);
	if (!json) {
		api__reply_error(c, -ENOMEM, "out of memory");
		return 0;
	}
	gsp_api_status_ok st = {.json = json, .json_len = strlen(json)};
	size_t cap = st.json_len + 16, n;
	uint8_t *buf = malloc(cap);
	if (buf && gsp_api_status_ok_encode(&st, buf, cap, &n) == 0)
		api__reply(c, buf, n);
	else
		api__reply_error(c, -ENOMEM, "the status does not fit a frame");
	free(buf);
	free(json);
	return 0;
}

/* One request: 0 once it is answered or under way, a negative errno if
 * it is malformed (the caller answers that, once, and closes). */
int api__on_request(api_client *c, const uint8_t *body, size_t len)
{
	gossipd *d = c->d;
	uint8_t type;
	int err = gsp_api_type(body, len, &type);
	if (err)
		return err;
	if (!c->hello && type != GSP_API_HELLO)
		return -EPROTO;
	if (type != GSP_API_REGISTER && c->passed_fd >= 0)
		return -EBADMSG;
	switch (type) {
	case GSP_API_HELLO:
		return on_hello(c, body, len);
	case GSP_API_REGISTER:
		return on_register(c, body, len);
	case GSP_API_STEP: {
		gsp_api_step s;
		if ((err = gsp_api_step_decode(body, len, &s)) != 0)
			return err;
		if (owner_check(c) == 0)
			started(c, grouped(c) ? group_step(&d->model.group, c, s.flags, on_step_done)
					      : core_step(&d->step.core, c, s.flags, on_step_done));
		return 0;
	}
	case GSP_API_AVERAGE: {
		gsp_api_average a;
		if ((err = gsp_api_average_decode(body, len, &a)) != 0)
			return err;
		if (owner_check(c) == 0)
			started(c, grouped(c) ? group_average(&d->model.group, c, &a, on_step_done)
					      : core_average(&d->step.core, c, &a, on_step_done));
		return 0;
	}
	case GSP_API_STATUS:
		return on_status(c, body, len);
	case GSP_API_FETCH:
		return on_fetch(c, body, len);
	case GSP_API_LEAVE:
		if ((err = gsp_api_leave_decode(body, len)) != 0)
			return err;
		err = cluster_leave_now(&d->cluster);
		if (err == -EOPNOTSUPP)
			api__reply_error(c, err, "this node is not a member of a cluster "
					 "([Cluster] Authority and a seed)");
		else if (err == -EALREADY)
			api__reply_error(c, err, "this node has left the cluster already");
		else if (err)
			api__reply_error(c, err, gsp_strerror(err));
		else
			api__reply_ok(c);
		return 0;
	case GSP_API_DETACH:
		if ((err = gsp_api_detach_decode(body, len)) != 0)
			return err;
		if (owner_check(c))
			return 0;
		/* A member of a local group that is not the last leaves it at
		 * once, its pending change written into its buffer. */
		if (grouped(c) && d->model.group.n_members > 1) {
			group_leave(&d->model.group, c);
			api__reply_ok(c);
			return 0;
		}
		/* Answered once the edges have ended their generations. */
		if (d->model.registered)
			d->model.owner = NULL;
		group_end_begin(&d->model.group);
		core_detach(&d->step.core, c, on_detached);
		return 0;
	default:
		return -EBADMSG;
	}
}
