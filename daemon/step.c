/* step: the node core on the libuv loop (step.h). */
#include <stdlib.h>
#include <unistd.h>

#include "step.h"

/* Models of at least this many floats step on the thread pool. */
#define OFFLOAD_FLOATS ((size_t)1 << 20)

#ifdef GSP_TEST_HOOKS
/* Test hooks (meson -Dtest_hooks=true only): GSP_OFFLOAD_FLOATS moves the
 * threshold above (0: every step off the loop), GSP_TEST_STEP_DELAY_MS
 * holds each step that long on the thread pool. */
static size_t env_size(const char *name, size_t dflt)
{
	const char *v = getenv(name);
	return v ? (size_t)strtoull(v, NULL, 10) : dflt;
}
#else
static size_t env_size(const char *name, size_t dflt)
{
	return dflt;
}
#endif

/* ---- clock and timers ------------------------------------------------- */

static uint64_t now_ms(void *ctx)
{
	stepper *s = ctx;
	uv_update_time(s->loop);
	return uv_now(s->loop);
}

static void on_timer(uv_timer_t *t)
{
	stepper *s = t->data;
	core_timer_fired(&s->core, (core_timer)(t - s->timer));
}

static void timer_start(void *ctx, core_timer t, uint64_t ms)
{
	stepper *s = ctx;
	uv_timer_start(&s->timer[t], on_timer, ms, 0);
}

static void timer_stop(void *ctx, core_timer t)
{
	stepper *s = ctx;
	uv_timer_stop(&s->timer[t]);
}

static bool timer_active(void *ctx, core_timer t)
{
	stepper *s = ctx;
	return uv_is_active((uv_handle_t *)&s->timer[t]);
}

/* ---- engine work off the loop ----------------------------------------- */

typedef struct step_work {
	uv_work_t req;
	stepper *s;
	gsp_node *node;
	undo *undo;              /* the undo copy is taken here: write_seq */
	uint64_t write_seq;
	unsigned delay_ms;
	int result;
} step_work;

static void work_run(uv_work_t *req)
{
	step_work *w = req->data;
	if (w->undo)
		undo_begin(w->undo, w->write_seq);
	w->result = gsp_node_step(w->node);
	if (w->delay_ms)
		usleep(w->delay_ms * 1000u);
}

static void work_done(uv_work_t *req, int status)
{
	step_work *w = req->data;
	stepper *s = w->s;
	int r = status < 0 ? status : w->result;
	free(w);
	core_work_done(&s->core, r);
}

static int engine_step(void *ctx)
{
	stepper *s = ctx;
	return gsp_node_step(s->model->node);
}

static bool offloads(void *ctx)
{
	stepper *s = ctx;
	return gsp_layout_floats(s->model->layout) >= s->offload_floats;
}

static bool offload(void *ctx, bool copy, uint64_t write_seq)
{
	stepper *s = ctx;
	step_work *w = calloc(1, sizeof(*w));
	if (!w)
		return false;
	w->req.data = w;
	w->s = s;
	w->node = s->model->node;
	w->undo = copy ? &s->model->undo : NULL;
	w->write_seq = write_seq;
	w->delay_ms = s->test_delay_ms;
	if (uv_queue_work(s->loop, &w->req, work_run, work_done) == 0)
		return true;
	free(w);
	return false;
}

/* ---- the buffer and the mesh ------------------------------------------ */

static void on_undo_begin(void *ctx, uint64_t write_seq)
{
	stepper *s = ctx;
	undo_begin(&s->model->undo, write_seq);
}

static void on_undo_end(void *ctx)
{
	stepper *s = ctx;
	undo_end(&s->model->undo);
}

static void save_records(void *ctx)
{
	stepper *s = ctx;
	mesh_save_records(s->model->mesh);
}

static void release_model(void *ctx)
{
	stepper *s = ctx;
	model_detach(s->model);
}

static void idle(void *ctx)
{
	stepper *s = ctx;
	mesh_idle(s->model->mesh);
}

static void bytes(void *ctx, uint64_t *ret_sent, uint64_t *ret_received)
{
	stepper *s = ctx;
	model_bytes(s->model, ret_sent, ret_received);
}

static const core_ops step_core_ops = {
	.now_ms = now_ms, .timer_start = timer_start, .timer_stop = timer_stop,
	.timer_active = timer_active, .engine_step = engine_step, .offloads = offloads,
	.offload = offload,
	.undo_begin = on_undo_begin, .undo_end = on_undo_end,
	.save_records = save_records, .release_model = release_model, .idle = idle,
	.bytes = bytes,
};

/* ---- the local group (group.h) ---------------------------------------- */

static void on_group_timer(uv_timer_t *t)
{
	stepper *s = t->data;
	group_timer_fired(&s->model->group);
}

static void group_timer_start(void *ctx, uint64_t ms)
{
	stepper *s = ctx;
	uv_timer_start(&s->group_timer, on_group_timer, ms, 0);
}

static void group_timer_stop(void *ctx)
{
	stepper *s = ctx;
	uv_timer_stop(&s->group_timer);
}

/* The core's client for a group's request is the group. */
static void on_node_done(void *client, const step_result *r)
{
	group_node_done(client, r);
}

static int node_start(void *ctx, const group_request *req)
{
	stepper *s = ctx;
	group *g = &s->model->group;
	return req->average ? core_average(&s->core, g, &req->avg, on_node_done)
			    : core_step(&s->core, g, req->flags, on_node_done);
}

static void member_release(void *ctx, void *handle)
{
	model_member_release(handle);
}

static const group_ops step_group_ops = {
	.now_ms = now_ms, .timer_start = group_timer_start,
	.timer_stop = group_timer_stop, .node_start = node_start,
	.release = member_release,
};

static void edges_changed(void *ctx)
{
	stepper *s = ctx;
	core_edges_changed(&s->core);
}

void step_init(stepper *s, uv_loop_t *loop, model *m, unsigned max_staleness,
	       unsigned max_wait_ms)
{
	*s = (stepper){.loop = loop, .model = m};
	core_init(&s->core, &m->mesh->edges, &step_core_ops, s, max_staleness, max_wait_ms);
	s->offload_floats = env_size("GSP_OFFLOAD_FLOATS", OFFLOAD_FLOATS);
	/* Test hook: every offloaded step takes at least this long, so tests
	 * can land peer messages inside the window. */
	s->test_delay_ms = (unsigned)env_size("GSP_TEST_STEP_DELAY_MS", 0);
	for (int t = 0; t < CORE_TIMERS; t++) {
		uv_timer_init(loop, &s->timer[t]);
		s->timer[t].data = s;
	}
	group_init(&m->group, &step_group_ops, s, m->cfg->max_local_trainers,
		   m->cfg->local_wait_ms);
	uv_timer_init(loop, &s->group_timer);
	s->group_timer.data = s;
	mesh_set_changed(m->mesh, edges_changed, s);
}

void step_close(stepper *s)
{
	for (int t = 0; t < CORE_TIMERS; t++)
		uv_close((uv_handle_t *)&s->timer[t], NULL);
	uv_close((uv_handle_t *)&s->group_timer, NULL);
}
