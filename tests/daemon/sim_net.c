/* sim_net.c: the network between the two daemons and its faults. */
#include "edgesim.h"


/* x's oldest frame to the peer, whose session must be up: a frame never
 * reaches an end whose session is down (the daemon reads frames of a
 * live link only).  x's own session may be down already: the frames it
 * wrote before it closed first (half_close). */
int sim_deliver_one(sim *s, ep_end *x)
{
	ck_assert_msg(x->other->session, "a frame delivered to an end whose session is down");
	s->st.late += !x->session;
	return ep_deliver_one(x);
}


void sim_deliver(sim *s, int i)
{
	ep_end *x = end_of(s, i);
	static const char *names[] = {"?", "MODEL", "ROUND", "RESYNC"};
	uint8_t type = x->out[0].len ? x->out[0].data[0] : 0;
	char what[64];
	snprintf(what, sizeof(what), "%s delivered, sent by", type < 4 ? names[type] : "frame");
	sim_say(s, what, i);
	int err = sim_deliver_one(s, x);
	ck_assert_msg(err <= 1 || err >= 0, "frame refused: %d", err);
	if (err < 0 && s->trace)
		printf("       (refused: %d, session closed)\n", err);
}


void sim_reset(sim *s)
{
	sim_say(s, "session reset (frames in flight lost)", -1);
	ep_end_session(&s->p.a);
}


/* --faults halfclose.  The session ends at i first (its GOODBYE, a
 * reload, its dead timeout, its daemon killed): of the frames i had
 * queued towards the peer the first `keep` still reach it, as TCP
 * delivers what was written before the close, and the rest are lost;
 * the peer's frames towards i are lost, and so is whatever the peer
 * sends until it notices (peer_notices: a later action, after the
 * frames kept, possibly after other actions at the peer). */
void sim_half_close(sim *s, int i, unsigned keep)
{
	ep_end *x = end_of(s, i);
	if (s->trace)
		printf("       (the session ends at %c first; %u of %u frames it sent still "
		       "reach the peer)\n", i ? 'b' : 'a', keep, x->n_out);
	for (unsigned k = keep; k < x->n_out; k++)
		free(x->out[k].data);
	x->n_out = keep;
	ep_drop_queue(x->other);
	s->st.half_closed++;
	x->session = false;
	edge_session_down(x->e);
}


/* The peer reads the close (its GOODBYE after the frames it kept, or a
 * reset it notices): its session ends too. */
void sim_peer_notices(sim *s, int i)
{
	sim_say(s, "the close reaches the peer: its session ends at", i);
	ep_end_session(end_of(s, i));
}


/* Whether a session closes at one end first where the daemon closes it
 * with a GOODBYE (--faults halfclose, in half the cases). */
bool sim_closes_first(sim *s, int i)
{
	return (s->faults & FAULT_HALFCLOSE) && end_of(s, i)->session &&
	       end_of(s, i)->other->session && pick(s, 2);
}


/* A half-closed session ends at the peer too once the frames kept
 * reached it: settle's sessions start from both ends down. */
void sim_settle_half_close(sim *s)
{
	for (int i = 0; i < 2; i++) {
		ep_end *x = end_of(s, i);
		if (x->session || !x->other->session)
			continue;
		while (x->n_out && x->other->session)
			(void)sim_deliver_one(s, x);
		if (x->other->session)
			ep_end_session(x->other);
	}
}


void sim_session_up(sim *s)
{
	sim_say(s, "new session", -1);
	s->st.up_busy += s->tr[0].work || s->tr[1].work;
	ep_session_up(&s->p, (uint8_t)(1 + pick(s, 250)));
}
