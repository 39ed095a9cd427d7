/*
 * The daemon's status document (status_doc.h) in the Prometheus text
 * exposition format (version 0.0.4): what `gossipctl metrics` prints and
 * gossipd's metrics listener (MetricsListen) serves, from this one
 * writer.  Each family's # HELP and # TYPE lines come once, right before
 * its samples; families without samples are left out.  Label values
 * escape backslash, double quote and newline; HELP text backslash and
 * newline.  Per-edge series carry peer="<public key>" and, when the
 * [Peer] has a Name, name="<Name>" beside it.
 */
#ifndef GSP_PROM_TEXT_H
#define GSP_PROM_TEXT_H

#include "status_doc.h"
#include "textbuf.h"

/* Appends the exposition of st to out.  Returns 0, or -ENOMEM (out then
 * holds a partial text: discard it). */
int gsp_prom_write(const gsp_sdoc *st, gsp_textbuf *out);

#endif
