/*
 * trainerlink: what the trainer tools (gossip-train, gossip-testtrainer)
 * share about talking to the local gossipd: connecting with a message that
 * names the cause when it fails, reporting a failed client call in the
 * daemon's own words, and waiting until the edges are up before training.
 * Also writing the parameter buffer to a file.  Messages go to stderr
 * prefixed with the program's name.
 */
#ifndef GSP_TOOLS_TRAINERLINK_H
#define GSP_TOOLS_TRAINERLINK_H

#include "client.h"

/* gsp_client_connect() with a message on failure ("gossipd is not
 * running: ...").  Returns 0 or the negative error. */
int trainer_link_connect(const char *prog, const char *socket, const char *name,
			 gsp_client **ret);

/* Prints why a client call failed: the daemon's text when it sent some,
 * else the errno text.  Returns 1 (an exit status). */
int trainer_link_fail(const char *prog, gsp_client *c, const char *what,
		      int err);

/* Polls STATUS until n edges are up (n 0: every configured edge; none
 * configured: returns at once), for at most timeout_s seconds.  0, or -1
 * after a message. */
int trainer_link_wait_edges(const char *prog, gsp_client *c, unsigned n,
			    unsigned timeout_s);

/* Writes x[0..n) as raw float32 to path.  0, or -1 after a message. */
int trainer_link_dump(const char *prog, const char *path, const float *x,
		      size_t n);

#endif
