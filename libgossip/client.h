/*
 * libgossip client: the trainer's side of gossipd's local API.
 *
 * This header owns the C client of the daemon's Unix-socket API
 * (proto/PROTOCOL.md, section 5): connecting with the HELLO version check,
 * handing the daemon the model in shared memory (REGISTER), asking for
 * gossip steps (STEP), gossip-only averaging (AVERAGE), the daemon's status
 * document (STATUS), and giving the model back (DETACH).  One AF_UNIX
 * stream socket per client and one request at a time, each call blocking
 * until the reply or its timeout; no threads, no event loop, no logging.
 *
 * The client reconnects by itself to a restarted daemon and registers the
 * same buffer again; meanwhile steps return at once, offline.  No call
 * waits longer than a timeout (60 s by default).
 *
 * Example (error handling shortened; examples/client-example.c is a
 * complete program):
 *
 *	gsp_client *c;
 *	gsp_tensor t[2] = {
 *		{.name = "w", .ndim = 2, .shape = {100, 100}},
 *		{.name = "b", .ndim = 1, .shape = {100}},
 *	};
 *	float *params;
 *	gsp_client_step_result st;
 *
 *	int r = gsp_client_connect("/run/gossipd/gossipd.sock", "my-trainer", &c);
 *	if (r < 0) {
 *		fprintf(stderr, "gossipd: %s\n", gsp_strerror(r));
 *		return 1;
 *	}
 *	r = gsp_client_register(c, t, 2, &params);   // params: 10100 floats
 *	if (r < 0)
 *		fprintf(stderr, "register: %s: %s\n", gsp_strerror(r),
 *			gsp_client_last_error(c));
 *	init_model(params);                          // w at params[0..10000),
 *	for (int i = 0; r == 0 && i < steps; i++) {  // b at params[10000..)
 *		train_one_step(params);
 *		r = gsp_client_step(c, 0, &st);      // gossip, in place;
 *	}                                            // st.offline: not now
 *	gsp_client_detach(c);
 *	gsp_client_close(c);
 *
 * Shared memory
 *   gsp_client_register() creates the parameter buffer itself: a sealed
 *   memfd (it can never shrink or grow) mapped MAP_SHARED, whose file
 *   descriptor goes to the daemon with the REGISTER frame.  Tensors are
 *   packed in the given order from offset 0 with no padding, float32 in
 *   host byte order.  The trainer reads and writes the buffer freely
 *   between calls; the daemon reads and writes it only while the trainer is
 *   inside gsp_client_step() or gsp_client_average().  So the buffer must
 *   not be touched from another thread during those two calls.
 *
 * Errors
 *   Every call that can fail returns 0 or a negative errno (gsp_strerror()
 *   gives text for both errno values and libgossip's GSP_E* codes).
 *   - A daemon ERROR reply returns the daemon's code (a negative errno or
 *     a GSP_E* code) and keeps its text for gsp_client_last_error().  The
 *     connection stays usable, unless the daemon closed it (it does after
 *     -EPROTO, -EPROTONOSUPPORT and malformed requests); then the next call
 *     finds the connection lost and reconnects (see Restarts).
 *   - -EBADMSG: the daemon's reply was malformed (bad frame length, a
 *     message that does not decode, or a reply of the wrong type).  The
 *     stream can no longer be trusted: the client is then unusable.
 *   - -ECONNRESET or -EPIPE: the daemon closed the connection (it stopped
 *     or restarted); -ENOENT or -ECONNREFUSED: no daemon at the socket.
 *     The client is then offline and reconnects by itself (see Restarts).
 *   - -ETIMEDOUT: a reply did not come within the timeout (see Timeouts).
 *     The client closes its connection (the daemon detaches the model)
 *     and is unusable, as after any other failure of the socket itself,
 *     or -ENOMEM for a large reply.
 *   - gsp_client_last_failure() says what a failed call met, beyond its
 *     code (the stage, the daemon's version, the length of a refused
 *     frame, the type of an unexpected reply), for messages that name
 *     the cause; gsp_client_connect_opts() fills the same record when
 *     it fails.
 *   - Every later call on an unusable client returns -ENOTCONN without
 *     touching the socket.  The parameter buffer stays mapped and valid
 *     until gsp_client_close(), so the trainer can still save its model.
 *   - Other negative errno values come from the system calls (socket,
 *     memfd_create, mmap...); -EINVAL for invalid arguments.
 *   Outputs (ret_*) are written only on success.
 *
 * Restarts
 *   When the daemon goes away (its socket is missing or refuses, or the
 *   connection ends: EOF, -ECONNRESET, -EPIPE), the client goes offline.
 *   - gsp_client_step() (without DRAIN) then returns 0 at once with
 *     .offline set and nothing gossiped: training goes on locally.
 *     After an offline step, gsp_client_last_failure() says why the
 *     daemon is away (the lost connection's or the last attempt's error).
 *   - Offline steps try to reconnect, at most one attempt per step: the
 *     first at the next step, then after 100 ms, doubling up to 500 ms
 *     between attempts.  An attempt waits at most 1 s (or timeout_ms if
 *     shorter), so a long outage costs a step one failed connect() now
 *     and then.  An attempt connects, says HELLO and, if a model is
 *     registered, REGISTERs the same memfd with the same tensors: the
 *     parameter pointer stays valid and keeps its values, and the daemon
 *     works on it again from that step on.  STEP_OK's step and byte
 *     counts then start again from the new REGISTER.
 *   - DRAIN, gsp_client_average(), gsp_client_status() and
 *     gsp_client_register() while offline try to reconnect at once; if the
 *     daemon is still away they return that attempt's error (-ENOENT,
 *     -ECONNREFUSED, -ECONNRESET, -EPIPE, -ETIMEDOUT) and the client
 *     stays offline.  gsp_client_detach() while offline, or when the
 *     connection is lost during it, releases the buffer locally and
 *     returns 0 (the daemon holds no model of ours).
 *   - What cannot be cured by waiting is not retried: another protocol
 *     version, or the daemon's ERROR to the HELLO or the REGISTER
 *     (-EBUSY: another trainer registered meanwhile; a refused model).
 *     The call that met it returns it (its text in
 *     gsp_client_last_error()) and the client is unusable.
 *   - The library writes nothing to stderr; the step result and
 *     gsp_client_last_failure() say what happened.
 *   GSP_CLIENT_NO_RECONNECT in gsp_client_options.flags turns this off:
 *   a lost connection returns -ECONNRESET or -EPIPE and leaves the client
 *   unusable.
 *
 * A daemon killed inside a write
 *   The buffer carries, after the parameters, an undo section
 *   (PROTOCOL.md 5.4): the daemon copies the parameters there before each
 *   write into them.  When the connection is lost, the client waits for
 *   the daemon's process to be gone (at most 5 s) and, if a write was
 *   still under way, puts the parameters back as they were before it;
 *   the next daemon redoes it at REGISTER if its records count it.  So a
 *   SIGKILL at any moment lands each round at both ends or at neither.
 *   The cost is a second copy of the parameters in the memfd, and one
 *   memcpy in the daemon per step that applies something.
 *   GSP_CLIENT_NO_UNDO turns it off.
 *
 * Timeouts
 *   No call waits for ever by default.  Connecting (HELLO included) and
 *   each request's reply wait at most gsp_client_options.timeout_ms
 *   (GSP_CLIENT_TIMEOUT_MS, 60 s, by default; gsp_client_connect() uses
 *   the default), the whole call and not each read.  A STEP without SYNC
 *   is answered within the daemon's MaxWait (10 ms) plus its compute; the
 *   timeout is for a stuck daemon or a SYNC, DRAIN or AVERAGE that waits
 *   for neighbours.  gsp_client_average() waits its time_limit_ms longer.
 *   GSP_CLIENT_NO_TIMEOUT waits without limit.  After a timeout the
 *   daemon may still finish that request's work on the buffer until it
 *   sees the connection closed.  Interrupted system calls
 *   (EINTR) are restarted.  Writes use MSG_NOSIGNAL, so a closed daemon
 *   gives -EPIPE rather than SIGPIPE.
 *
 * Threads: a gsp_client is not thread-safe; use one per thread or lock.
 * The one exception is gsp_client_interrupt().
 */
#ifndef GOSSIP_CLIENT_H
#define GOSSIP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gossip.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits of the local API that client calls check (proto/PROTOCOL.md). */
#define GSP_CLIENT_NAME_MAX 128          /* client_name, in bytes */
#define GSP_CLIENT_TENSOR_NAME_MAX 63    /* a tensor's name, in bytes */
#define GSP_CLIENT_MAX_TENSORS 65536     /* tensors in one model */
#define GSP_CLIENT_MAX_FRAME (1u << 20)  /* a request or reply, in bytes */
#define GSP_CLIENT_ERROR_TEXT_MAX 1024   /* the daemon's ERROR text */

/* gsp_client_step() flags. */
#define GSP_CLIENT_STEP_SYNC 0x1u  /* wait until every connected edge's
				      round in flight has completed */
#define GSP_CLIENT_STEP_DRAIN 0x2u /* settle before leaving: answer rounds
				      a neighbour already sent, wait for
				      the rounds in flight (not a
				      straggler's, at most the daemon's
				      DrainWait; with SYNC every one),
				      apply, and start no new round */

typedef struct gsp_client gsp_client;

/* What gsp_client_step() reports. */
typedef struct gsp_client_step_result {
	uint64_t step;               /* STEPs served since REGISTER */
	uint32_t edges_applied;      /* edge updates applied by this step */
	uint32_t edges_projected;    /* rounds started by this step */
	uint32_t edges_skipped;      /* edges whose round is still in flight */
	uint32_t max_staleness;      /* in steps, over all edges */
	uint64_t bytes_sent;         /* since REGISTER, all edges */
	uint64_t bytes_received;
	double consensus_estimate;   /* relative; NaN until an edge has
					completed a round */
	/* What the client adds (see "Restarts" above). */
	bool offline;                /* the daemon was away: nothing was
					gossiped; the fields above are the
					last gossiped step's, with the three
					edges_* counts 0 */
	uint64_t offline_steps;      /* steps taken offline, in the client's
					life */
	uint32_t reconnects;         /* times the client connected and
					registered again */
} gsp_client_step_result;

/* What gsp_client_average() reports. */
typedef struct gsp_client_average_result {
	uint32_t rounds;             /* gossip rounds run */
	double estimate;             /* the final consensus estimate; NaN
					when unknown */
	bool reached;                /* estimate <= target */
} gsp_client_average_result;

/* What gsp_client_fetch() reports. */
typedef struct gsp_client_fetch_result {
	uint64_t bytes;              /* copied into the buffer */
	uint32_t took_ms;
	char peer[65];               /* the short key of the peer copied */
} gsp_client_fetch_result;

/* The default of gsp_client_options.timeout_ms, and the value for none. */
#define GSP_CLIENT_TIMEOUT_MS 60000u
#define GSP_CLIENT_NO_TIMEOUT UINT32_MAX

/* gsp_client_options.flags. */
#define GSP_CLIENT_NO_RECONNECT 0x1u  /* a lost connection makes the client
					 unusable instead (-ENOTCONN) */
#define GSP_CLIENT_NO_UNDO 0x2u       /* no undo section: the buffer is the
					 parameters only (half the memory),
					 and a daemon killed inside a write
					 may leave a round at one end */

/* Options of gsp_client_connect_opts(); zero-initialise, then set. */
typedef struct gsp_client_options {
	const char *client_name;     /* shown in the daemon's logs and
					status; NULL: "" */
	uint32_t timeout_ms;         /* the longest wait for connecting
					(HELLO included) and for each
					request's reply, for the client's
					whole life (AVERAGE: its
					time_limit_ms longer); 0:
					GSP_CLIENT_TIMEOUT_MS (60 s);
					GSP_CLIENT_NO_TIMEOUT: no limit */
	uint32_t flags;              /* GSP_CLIENT_NO_RECONNECT,
					GSP_CLIENT_NO_UNDO */
} gsp_client_options;

/* Where a call failed, for gsp_client_failure. */
typedef enum gsp_client_stage {
	GSP_CLIENT_OK = 0,           /* the last call succeeded */
	GSP_CLIENT_LOCAL,            /* before any I/O: invalid arguments,
					memory, an unusable client */
	GSP_CLIENT_CONNECT,          /* creating or connecting the socket */
	GSP_CLIENT_IO,               /* sending or receiving: -ECONNRESET,
					-EPIPE (the daemon closed),
					-ETIMEDOUT, other socket errors */
	GSP_CLIENT_DAEMON,           /* the daemon's ERROR reply: its code
					and text */
	GSP_CLIENT_VERSION,          /* HELLO_OK of another major version */
	GSP_CLIENT_FRAME,            /* a reply frame of length 0 or above
					GSP_CLIENT_MAX_FRAME */
	GSP_CLIENT_REPLY,            /* a reply of another type than the
					request's, or that does not decode */
} gsp_client_stage;

/* What the last failed call met (the fields of its stage are set, the
 * others are 0). */
typedef struct gsp_client_failure {
	gsp_client_stage stage;
	int code;                    /* what the call returned */
	uint16_t version;            /* VERSION: the daemon's, major << 8 |
					minor */
	uint32_t frame_len;          /* FRAME: the declared length */
	uint8_t reply_type;          /* REPLY: the reply's type byte */
	bool unexpected_type;        /* REPLY: true when the type is not the
					request's reply, false when the
					reply does not decode */
	char text[GSP_CLIENT_ERROR_TEXT_MAX + 1]; /* DAEMON: its text, else "" */
} gsp_client_failure;

/* Connects to the daemon's socket at socket_path and exchanges HELLO /
 * HELLO_OK.  client_name (NULL: "") is shown in the daemon's logs and
 * status; at most GSP_CLIENT_NAME_MAX bytes.  The default options (a 60 s
 * timeout, reconnecting; see gsp_client_connect_opts()).  Errors:
 *   -ENOENT          no socket at that path (the daemon is not running);
 *   -ECONNREFUSED    a stale socket file (the daemon is not running);
 *   -EACCES          no permission on the socket (check its group);
 *   -ENAMETOOLONG    the path does not fit in sockaddr_un;
 *   -EPROTONOSUPPORT the daemon speaks another major protocol version;
 *   -EBADMSG, -ECONNRESET, a daemon ERROR code: as described above.
 *
 *	gsp_client *c;
 *	int r = gsp_client_connect("/run/gossipd/gossipd.sock", "resnet", &c);
 *	if (r == -ENOENT || r == -ECONNREFUSED)
 *		fprintf(stderr, "gossipd is not running\n");
 */
GSP_EXPORT int gsp_client_connect(const char *socket_path,
				  const char *client_name,
				  gsp_client **ret) GSP_MUST_CHECK;

/* gsp_client_connect() with options (opts NULL: the defaults): the client
 * name, the timeout and flags.  -ETIMEDOUT when the daemon does not accept
 * or answer HELLO within the timeout.  A daemon that is not running fails
 * this call (-ENOENT, -ECONNREFUSED): the client reconnects only once it
 * has connected.  On failure, if failure is not
 * NULL, it says what the attempt met (stage GSP_CLIENT_CONNECT for the
 * socket's own errors, the others as for gsp_client_last_failure()).
 *
 *	gsp_client_options o = {.client_name = "probe", .timeout_ms = 5000};
 *	gsp_client_failure f;
 *	if (gsp_client_connect_opts(path, &o, &c, &f) < 0 &&
 *	    f.stage == GSP_CLIENT_VERSION)
 *		fprintf(stderr, "gossipd speaks %u.%u\n", f.version >> 8,
 *			f.version & 0xff);
 */
GSP_EXPORT int gsp_client_connect_opts(const char *socket_path,
				       const gsp_client_options *opts,
				       gsp_client **ret,
				       gsp_client_failure *failure) GSP_MUST_CHECK;

/* Registers the model tensors[0..n) (name, ndim and shape are read; the
 * derived fields are ignored): creates the shared buffer of
 * 4 * sum(numel) bytes, zero-filled, sends REGISTER with its file
 * descriptor and waits for the daemon's answer.  On success *ret_params is
 * the mapped buffer, tensor i starting at float numel_0 + ... +
 * numel_{i-1}; fill it (the initial model) before the first STEP.  It stays
 * valid until a successful gsp_client_detach() or gsp_client_close().
 * Names must be NUL-terminated and at most GSP_CLIENT_TENSOR_NAME_MAX
 * bytes.  Errors: -EINVAL (n is 0 or above GSP_CLIENT_MAX_TENSORS, a bad
 * name, ndim or dimension), -EOVERFLOW, -EMSGSIZE (the description exceeds
 * GSP_CLIENT_MAX_FRAME), -EBUSY (this client already holds a registration:
 * detach first), system errors (-ENOMEM...), or the daemon's ERROR code
 * (-EBUSY: another trainer holds the daemon's model; -EMSGSIZE: the model
 * is too large for the configured method...), with its text in
 * gsp_client_last_error().
 *
 *	float *p;
 *	gsp_tensor t = {.name = "w", .ndim = 2, .shape = {64, 300}};
 *	if (gsp_client_register(c, &t, 1, &p) == 0)
 *		memcpy(p, my_weights, 64 * 300 * sizeof(float));
 */
GSP_EXPORT int gsp_client_register(gsp_client *c, const gsp_tensor *tensors,
				   size_t n, float **ret_params) GSP_MUST_CHECK;

/* Wire precisions of gsp_client_register_options.precision. */
typedef enum gsp_client_precision {
	GSP_CLIENT_PRECISION_DEFAULT = 0,  /* the daemon's: float32 */
	GSP_CLIENT_PRECISION_FLOAT32,
	GSP_CLIENT_PRECISION_FLOAT16,      /* powergossip: half the bytes */
	GSP_CLIENT_PRECISION_BFLOAT16,     /* powergossip: half the bytes */
} gsp_client_precision;

/* Parameter types of gsp_client_register_options.dtype. */
typedef enum gsp_client_dtype {
	GSP_CLIENT_DTYPE_DEFAULT = 0,      /* float32 */
	GSP_CLIENT_DTYPE_FLOAT32,
	GSP_CLIENT_DTYPE_FLOAT16,          /* IEEE binary16 */
	GSP_CLIENT_DTYPE_BFLOAT16,
} gsp_client_dtype;

/* Options of gsp_client_register_opts(): the engine settings this model
 * asks of the daemon (PROTOCOL.md 5.2; both ends of an edge must ask the
 * same, or the daemons refuse the edge naming both).  Zero-initialise,
 * then set: a field left 0 (method NULL) is the daemon's config's. */
typedef struct gsp_client_register_options {
	const char *method;          /* "powergossip", "exact", "choco-topk",
					"choco-randk" or "choco-sign"; NULL:
					the daemon's Method */
	unsigned rank;               /* powergossip's rank, 1..the daemon's
					MaxRank; 0: its Rank */
	float gamma;                 /* the consensus step, finite and > 0;
					0: the daemon's Gamma */
	unsigned power_iterations;   /* gossip rounds per STEP (the paper's
					s): only 1 is implemented; 0: 1 */
	gsp_client_precision precision;
	/* The parameters' type in the buffer.  A 16-bit one: the buffer
	 * holds 2 bytes a value (*ret_params is then a buffer of uint16_t:
	 * cast it; gsp_client_detach_copy() copies 2 bytes a value), has no
	 * undo section, and the daemon gossips a float32 master copy of it
	 * and writes it back rounded (PROTOCOL.md 5.3). */
	gsp_client_dtype dtype;
	/* 1: join the machine's local group, the trainers on this machine
	 * that share one model (same tensors, settings and float32 dtype):
	 * the daemon averages them at each step and gossips their mean
	 * (PROTOCOL.md 5.3, "Local group").  0: this model alone. */
	unsigned group;
} gsp_client_register_options;

/* gsp_client_register() asking for the settings in opts (NULL: the
 * daemon's).  A registration again after a daemon restart asks the same.
 * Besides gsp_client_register()'s errors: -EINVAL for an unknown method
 * name, precision or dtype, a non-finite or negative gamma, a rank or iteration
 * count above 65535; the daemon's -ERANGE (beyond its limits: a rank
 * above MaxRank) or -EOPNOTSUPP (not implemented: more than one power
 * iteration; a 16-bit precision or a rank for a method without one; a choco
 * method that the daemon's AverageSchedule or Gamma = auto rule out),
 * with its reason in gsp_client_last_error().
 *
 *	gsp_client_register_options o = {.method = "powergossip", .rank = 2};
 *	r = gsp_client_register_opts(c, t, 2, &o, &params);
 */
GSP_EXPORT int gsp_client_register_opts(gsp_client *c, const gsp_tensor *tensors,
					size_t n,
					const gsp_client_register_options *opts,
					float **ret_params) GSP_MUST_CHECK;

/* One gossip step, typically right after the optimizer step: the daemon
 * applies every completed edge update into the buffer and projects the
 * next round.  flags: 0, GSP_CLIENT_STEP_SYNC (reproducible runs, tests)
 * or GSP_CLIENT_STEP_DRAIN (the last step of a run; with SYNC as well in
 * a synchronous run, to wait for every round).  On success
 * *ret_stats (may be NULL) gets the step's statistics.  While the daemon
 * is away a step without DRAIN returns 0 at once with ret_stats->offline
 * set (see Restarts).  Errors: -EINVAL for unknown flags; the daemon's
 * -ENOENT (nothing registered) or -EPERM (another connection's model);
 * -ETIMEDOUT; a permanent failure to register again.
 *
 *	gsp_client_step_result st;
 *	if (gsp_client_step(c, 0, &st) == 0)
 *		printf("step %llu: %u edges applied\n",
 *		       (unsigned long long)st.step, st.edges_applied);
 */
GSP_EXPORT int gsp_client_step(gsp_client *c, uint32_t flags,
			       gsp_client_step_result *ret_stats) GSP_MUST_CHECK;

/* Gossip-only rounds, without training, until the consensus estimate is
 * <= target, time_limit_ms passed, or max_rounds rounds ran (0 = no
 * limit; not both limits 0).  Neighbours advance only while they too are
 * averaging, so every trainer should call it, typically once at the end.
 * *ret (may be NULL) gets the rounds run, the final estimate and whether
 * the target was reached (not reaching it is not an error).  Errors:
 * -EINVAL (target not finite or negative, both limits 0); daemon codes as
 * for gsp_client_step().
 *
 *	gsp_client_average_result avg;
 *	if (gsp_client_average(c, 1e-4, 30000, 0, &avg) == 0 && !avg.reached)
 *		fprintf(stderr, "consensus not reached: %g\n", avg.estimate);
 */
GSP_EXPORT int gsp_client_average(gsp_client *c, double target,
				  uint32_t time_limit_ms, uint32_t max_rounds,
				  gsp_client_average_result *ret) GSP_MUST_CHECK;

/* Copies a neighbour's current model into the buffer (PROTOCOL.md 5.3, FETCH):
 * the daemon asks a peer whose edge is up (so whose model has this one's
 * fingerprint: same layout, dtype and settings) for a snapshot, checks it
 * against the peer's BLAKE2b hash and writes it into the buffer at once,
 * before this returns.  For a trainer that joins a running job (call it
 * after gsp_client_register(), before the first step) or that restarted
 * from an old checkpoint.  The copy moves the network's average by the
 * difference, as any write of the trainer's does.  ret->bytes 0 (and
 * peer "") when every neighbour up said its model has not stepped yet:
 * a job that starts, the buffer keeps its own model.  Errors: -ETIMEDOUT
 * (no copy within time_limit_ms: no neighbour with this model, say),
 * -EOPNOTSUPP (a local group), -EBUSY, and daemon codes as for
 * gsp_client_step().  Needs a daemon of protocol 1.8.
 *
 *	gsp_client_fetch_result fr;
 *	if (gsp_client_fetch(c, 30000, &fr) == 0)
 *		printf("started from peer %s's model\n", fr.peer);
 */
GSP_EXPORT int gsp_client_fetch(gsp_client *c, uint32_t time_limit_ms,
				gsp_client_fetch_result *ret) GSP_MUST_CHECK;

/* The daemon leaves its cluster and goes on running (PROTOCOL.md 5.3,
 * LEAVE; gossipctl leave): its member record says LEFT at once, and its
 * edges with the members end their generations exactly.  Allowed with
 * or without a registration.  Errors: -EOPNOTSUPP (not a member),
 * -EALREADY (left already), and the I/O codes of gsp_client_step(). */
GSP_EXPORT int gsp_client_leave(gsp_client *c) GSP_MUST_CHECK;

/* The daemon's status document (the JSON of `gossipctl status --json`) as
 * a malloc'd NUL-terminated string in *ret_json; free() it.  The document
 * itself holds no NUL.  Allowed with or without a registration.
 *
 *	char *json;
 *	if (gsp_client_status(c, &json) == 0) {
 *		puts(json);
 *		free(json);
 *	}
 */
GSP_EXPORT int gsp_client_status(gsp_client *c, char **ret_json) GSP_MUST_CHECK;

/* Gives the model back: the daemon ends each edge's generation with its
 * neighbour and stops using the buffer; on success the client unmaps the
 * buffer (the pointer from gsp_client_register() becomes invalid).
 * DETACH itself may still write the buffer: a round a neighbour ended the
 * generation before is taken back (PROTOCOL.md 4.6).  So the parameters
 * to keep are those after DETACH: gsp_client_detach_copy() copies them
 * (n values of the registered layout, of its dtype) into out before
 * unmapping; a copy
 * taken before DETACH may hold a round the network does not.  The
 * connection stays open and may register again.  On failure the buffer
 * stays mapped and out is untouched.  While the daemon is away it only
 * copies and releases the buffer (see Restarts).  Errors: the daemon's
 * -ENOENT (nothing registered) or -EPERM.
 *
 *	gsp_client_detach_copy(c, checkpoint);   // then save it
 */
GSP_EXPORT int gsp_client_detach_copy(gsp_client *c, float *out);
/* gsp_client_detach_copy(c, NULL): the parameters go with the buffer. */
GSP_EXPORT int gsp_client_detach(gsp_client *c);

/* The text of the daemon's ERROR reply if the last call on c failed with
 * one, "" otherwise (also after a success or a local failure).  Valid until
 * the next call on c.  Accepts NULL (returns ""). */
GSP_EXPORT const char *gsp_client_last_error(const gsp_client *c);

/* What the last call on c met if it failed (stage GSP_CLIENT_OK after a
 * success).  Valid until the next call on c.  Accepts NULL (returns a
 * record of stage GSP_CLIENT_LOCAL, code -EINVAL).
 *
 *	const gsp_client_failure *f = gsp_client_last_failure(c);
 *	if (f->stage == GSP_CLIENT_REPLY && f->unexpected_type)
 *		fprintf(stderr, "unexpected reply 0x%02x\n", f->reply_type);
 */
GSP_EXPORT const gsp_client_failure *
gsp_client_last_failure(const gsp_client *c);

/* Where the client's connection stands (gsp_client_state_of()). */
typedef enum gsp_client_state {
	GSP_CLIENT_CONNECTED = 0,    /* connected to the daemon */
	GSP_CLIENT_OFFLINE,          /* the daemon is away; the client
					reconnects (see Restarts) */
	GSP_CLIENT_UNUSABLE,         /* every call returns -ENOTCONN */
} gsp_client_state;

/* The connection's state now.  Accepts NULL (GSP_CLIENT_UNUSABLE). */
GSP_EXPORT gsp_client_state gsp_client_state_of(const gsp_client *c);

/* The daemon's version text from its HELLO_OK at the last connect (such
 * as "gossipd 0.1.0"), and its protocol version (major << 8 | minor) in
 * *ret_version if not NULL.  Valid until the next call on c.  Accepts
 * NULL (returns ""). */
GSP_EXPORT const char *gsp_client_daemon(const gsp_client *c,
					 uint16_t *ret_version);

/* The registered buffer's memfd (the parameters, then the undo section),
 * for a caller that maps the buffer itself, so that its own mapping may
 * outlive gsp_client_detach() (the Python package's arrays).  The file
 * descriptor stays the client's: valid until a successful
 * gsp_client_detach() or gsp_client_close(); dup() it to keep it.
 * -ENOENT when nothing is registered, -EINVAL for NULL. */
GSP_EXPORT int gsp_client_buffer_fd(const gsp_client *c);

/* Changes the client's timeout (gsp_client_options.timeout_ms: 0 the
 * default, GSP_CLIENT_NO_TIMEOUT none) for the calls that follow.
 * -EINVAL for NULL. */
GSP_EXPORT int gsp_client_set_timeout(gsp_client *c, uint32_t timeout_ms);

/* The one call that another thread may make while a call on c is in
 * progress (and the only one safe from a signal handler): the call
 * waiting on the daemon (or the next one that waits, if none is) returns
 * -ECANCELED, at stage GSP_CLIENT_IO, and the client is unusable.  With a
 * model registered it first waits for the daemon to let go of the buffer,
 * as after a timeout (see Timeouts).  Meant for shutting down (the Python
 * client's close() from another thread): gsp_client_close() follows,
 * once the interrupted call returned. */
GSP_EXPORT void gsp_client_interrupt(gsp_client *c);

/* Closes the connection (the daemon then detaches implicitly), unmaps the
 * parameter buffer and frees c.  Accepts NULL. */
GSP_EXPORT void gsp_client_close(gsp_client *c);

#ifdef __cplusplus
}
#endif
#endif
