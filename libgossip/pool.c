/* The engine's worker threads: a small pool that runs one job at a time on
 * a fixed number of workers, the calling thread being worker 0.
 *
 * A job is a function called once per worker with the worker's index.
 * Jobs split their work so that results never depend on timing: by a
 * fixed share per worker, or by claiming whole items whose result does not
 * depend on who computes them.  Jobs of one step come microseconds apart, so helpers
 * spin briefly for the next one before they sleep on a condition variable.
 * One thread at a time may use the pool (gsp__pool_acquire); others run
 * their work alone.  A forked child has no helpers and runs alone.
 *
 * Size: GSP_THREADS (1..GSP_POOL_MAX) if set, else the CPUs this process
 * may run on, at most GSP_POOL_MAX. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* Helpers spin this long for the next job before they sleep. */
#define SPIN_NS 50000

/* A counter alone on its cache line. */
typedef struct {
	_Alignas(64) atomic_uint_fast64_t v;
} line_counter;

static struct pool {
	pthread_mutex_t busy;         /* held by the thread using the pool */
	pthread_mutex_t sleep_lock;
	pthread_cond_t sleep_cond;
	unsigned workers;             /* including the caller */
	line_counter gen;             /* bumped once per posted job */
	/* The posted job: written before gen is bumped. */
	gsp__pool_fn fn;
	const void *job;
	unsigned nw;
	atomic_uint sleepers;
	line_counter done[GSP_POOL_MAX];
} pool = {
	.busy = PTHREAD_MUTEX_INITIALIZER,
	.sleep_lock = PTHREAD_MUTEX_INITIALIZER,
	.sleep_cond = PTHREAD_COND_INITIALIZER,
};
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* A bounded spin: spin_again() pauses and says whether the spin is still
 * younger than SPIN_NS (the clock is read every 256 looks). */
typedef struct {
	unsigned n;
	uint64_t t0;
	bool expired;
} spin;

static bool spin_again(spin *s)
{
	if (s->expired)
		return false;
	cpu_relax();
	if ((++s->n & 255) == 0) {
		uint64_t t = now_ns();
		if (!s->t0)
			s->t0 = t;
		else if (t - s->t0 > SPIN_NS)
			s->expired = true;
	}
	return !s->expired;
}

/* Waits until pool.gen differs from seen; returns the new value.  Spins
 * for SPIN_NS, then sleeps. */
static uint64_t wait_gen(uint64_t seen)
{
	spin sp = {0};
	uint64_t g;
	for (;;) {
		g = atomic_load(&pool.gen.v);
		if (g != seen)
			return g;
		if (!spin_again(&sp))
			break;
	}
	pthread_mutex_lock(&pool.sleep_lock);
	atomic_fetch_add(&pool.sleepers, 1);
	while ((g = atomic_load(&pool.gen.v)) == seen)
		pthread_cond_wait(&pool.sleep_cond, &pool.sleep_lock);
	atomic_fetch_sub(&pool.sleepers, 1);
	pthread_mutex_unlock(&pool.sleep_lock);
	return g;
}

static void *helper_main(void *arg)
{
	unsigned w = (unsigned)(uintptr_t)arg;
	uint64_t seen = 0;
	for (;;) {
		seen = wait_gen(seen);
		if (w < pool.nw)
			pool.fn(pool.job, w);
		atomic_store(&pool.done[w].v, seen);
	}
	return NULL;
}

static void pool_atfork_child(void)
{
	pthread_mutex_init(&pool.busy, NULL);
	pthread_mutex_init(&pool.sleep_lock, NULL);
	pthread_cond_init(&pool.sleep_cond, NULL);
	atomic_store(&pool.sleepers, 0);
	pool.workers = 1;
}

static unsigned pool_want(void)
{
	const char *env = getenv("GSP_THREADS");
	if (env && *env) {
		char *end;
		long v = strtol(env, &end, 10);
		if (!*end && v >= 1)
			return v > GSP_POOL_MAX ? GSP_POOL_MAX : (unsigned)v;
	}
	long n = sysconf(_SC_NPROCESSORS_ONLN);
#ifdef CPU_COUNT
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) < n)
		n = CPU_COUNT(&set);
#endif
	if (n < 1)
		n = 1;
	return n > GSP_POOL_MAX ? GSP_POOL_MAX : (unsigned)n;
}

static void pool_start(void)
{
	unsigned want = pool_want();
	pool.workers = 1;
	pthread_atfork(NULL, NULL, pool_atfork_child);
	for (unsigned w = 1; w < want; w++) {
		pthread_attr_t attr;
		pthread_t th;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		int err = pthread_create(&th, &attr, helper_main,
					 (void *)(uintptr_t)w);
		pthread_attr_destroy(&attr);
		if (err)
			break;
		pool.workers++;
	}
}

unsigned gsp__pool_size(void)
{
	pthread_once(&pool_once, pool_start);
	return pool.workers;
}

bool gsp__pool_acquire(void)
{
	pthread_once(&pool_once, pool_start);
	return pthread_mutex_trylock(&pool.busy) == 0;
}

void gsp__pool_release(void)
{
	pthread_mutex_unlock(&pool.busy);
}

void gsp__pool_run(unsigned nw, gsp__pool_fn fn, const void *job)
{
	if (nw > pool.workers)
		nw = pool.workers;
	if (nw <= 1) {
		fn(job, 0);
		return;
	}
	pool.fn = fn;
	pool.job = job;
	pool.nw = nw;
	uint64_t g = atomic_fetch_add(&pool.gen.v, 1) + 1;
	if (atomic_load(&pool.sleepers)) {
		pthread_mutex_lock(&pool.sleep_lock);
		pthread_cond_broadcast(&pool.sleep_cond);
		pthread_mutex_unlock(&pool.sleep_lock);
	}
	fn(job, 0);
	/* Spin for SPIN_NS, then yield between looks: where more threads
	 * are runnable than there are CPUs (a trainer using every core,
	 * many daemons on one machine) a helper may wait for a CPU, and a
	 * caller that only spun would burn its time slice meanwhile. */
	for (unsigned w = 1; w < pool.workers; w++) {
		spin sp = {0};
		while (atomic_load(&pool.done[w].v) != g)
			if (!spin_again(&sp))
				sched_yield();
	}
}
