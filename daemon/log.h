/* gossipd logging: one line per event on stderr, with a syslog-style
 * "<N>" priority prefix when stderr is the journal (JOURNAL_STREAM set)
 * and a level word otherwise.  The engine never logs; the daemon does. */
#ifndef GSP_DAEMON_LOG_H
#define GSP_DAEMON_LOG_H

#include "config.h"

void gsp_log_init(gsp_log_level level);
void gsp_log_set_level(gsp_log_level level);
void gsp_log(gsp_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define gsp_err(...) gsp_log(GSP_LOG_ERROR, __VA_ARGS__)
#define gsp_warn(...) gsp_log(GSP_LOG_WARNING, __VA_ARGS__)
#define gsp_info(...) gsp_log(GSP_LOG_INFO, __VA_ARGS__)
#define gsp_debug(...) gsp_log(GSP_LOG_DEBUG, __VA_ARGS__)

#endif
