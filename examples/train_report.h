/*
 * train_report: gossip-train's progress lines, for people (text) or
 * programs (JSON lines, CSV).  This module owns the record every report
 * carries and its three renderings; unknown numbers are NaN in the record,
 * "null" in JSON, empty in CSV and left out of text.
 */
#ifndef GSP_TOOLS_TRAIN_REPORT_H
#define GSP_TOOLS_TRAIN_REPORT_H

#include <stdint.h>
#include <stdio.h>

typedef enum gsp_report_format {
	GSP_REPORT_TEXT,
	GSP_REPORT_JSON,
	GSP_REPORT_CSV,
} gsp_report_format;

typedef struct gsp_report {
	const char *event;          /* "step", "epoch" or "final" */
	unsigned node;
	unsigned epoch;             /* epochs completed (step: the current) */
	uint64_t step;              /* optimizer steps so far */
	double loss;                /* mean training loss since the last report */
	double test_accuracy;       /* own model on the test set, 0..1 */
	double averaged_accuracy;   /* final: after gossip-only averaging */
	double consensus;           /* the daemon's relative estimate */
	uint32_t average_rounds;    /* final: AVERAGE rounds run */
	double sent_mb;             /* bytes sent to neighbours / 1e6 */
	double seconds;             /* since training started */
} gsp_report;

/* A record with every number unknown. */
gsp_report gsp_report_empty(const char *event, unsigned node);
/* The CSV header line; nothing for the other formats. */
void gsp_report_header(FILE *f, gsp_report_format fmt);
/* One line, flushed (a reader may be waiting on a pipe). */
void gsp_report_print(FILE *f, gsp_report_format fmt, const gsp_report *r);

#endif
