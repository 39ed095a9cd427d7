/* api_request: the local API's requests (PROTOCOL.md 5): HELLO,
 * REGISTER, STEP, AVERAGE, STATUS and DETACH decoded and handed to the
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
	if (c->d->model.owner != c) {
		api__reply_error(c, -EPERM, "the model belongs to another connection");
		return -1;
	}
	return 0;
}

static void started(api_client *c, int err)
{
	if (err == -EBUSY)
		api__reply_error(c, err, "a request is already in progress");
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
			started(c, core_step(&d->step.core, c, s.flags, on_step_done));
		return 0;
	}
	case GSP_API_AVERAGE: {
		gsp_api_average a;
		if ((err = gsp_api_average_decode(body, len, &a)) != 0)
			return err;
		if (owner_check(c) == 0)
			started(c, core_average(&d->step.core, c, &a, on_step_done));
		return 0;
	}
	case GSP_API_STATUS:
		return on_status(c, body, len);
	case GSP_API_DETACH:
		if ((err = gsp_api_detach_decode(body, len)) != 0)
			return err;
		if (owner_check(c))
			return 0;
		/* Answered once the edges have ended their generations. */
		if (d->model.registered)
			d->model.owner = NULL;
		core_detach(&d->step.core, c, on_detached);
		return 0;
	default:
		return -EBADMSG;
	}
}
