/*
 * model_options: the engine settings of one registered model.  The
 * config gives the defaults (Method, Rank, Gamma, WarmStart, Fraction)
 * and the limits (MaxRank; what AverageSchedule and Gamma = auto allow);
 * a REGISTER's options (PROTOCOL.md 5.2) choose within them.  Pure: no
 * state, no I/O; the model module calls it before it changes anything.
 */
#ifndef GOSSIPD_MODEL_OPTIONS_H
#define GOSSIPD_MODEL_OPTIONS_H

#include <stddef.h>

#include "config.h"
#include "gossip.h"
#include "proto.h"

/* The settings of a model whose REGISTER asked `asked` (set 0: the
 * config's) into *ret, or a refusal with its reason in err:
 *   -ERANGE      beyond the config's limits (a rank above MaxRank);
 *   -EOPNOTSUPP  what this daemon does not do: an unknown dtype or wire
 *                precision, more than one power iteration per STEP, a
 *                16-bit wire precision or a rank for a method that has
 *                none, a choco method where the config's AverageSchedule
 *                or Gamma = auto rules it out.
 * The wire precision asked goes to ret->wire (float32 when not asked).
 * *ret is written only on success. */
int model_options_resolve(const gsp_daemon_config *cfg,
			  const gsp_api_register_opts *asked, gsp_config *ret,
			  char *err, size_t err_len);

/* The parameters' dtype a REGISTER asked (float32 when not asked), once
 * model_options_resolve accepted it. */
gsp_dtype model_options_dtype(const gsp_api_register_opts *asked);

#endif
