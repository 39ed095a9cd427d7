/*
 * Text output for humans: aligned tables and terminal-safe strings.  Text
 * from the daemon is printed with control characters replaced by '?', so
 * a status document cannot move the cursor or recolour the terminal.
 */
#ifndef GOSSIPCTL_TABLE_H
#define GOSSIPCTL_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include "status_doc.h"

typedef struct gctl_table {
	size_t n_cols;
	const char *const *headers;
	const char *align;            /* one 'l' or 'r' per column */
	char **cells;                 /* n_rows * n_cols owned copies */
	size_t n_rows, cap_rows;
} gctl_table;

/* headers and align (a string of n_cols 'l'/'r') must outlive the table. */
void gctl_table_init(gctl_table *t, size_t n_cols, const char *const *headers,
		     const char *align);
/* Appends a row of n_cols cells (NULL prints as "-").  0 or -ENOMEM. */
int gctl_table_add(gctl_table *t, const char *const *cells);
/* Prints the header and the rows, columns two spaces apart. */
void gctl_table_print(const gctl_table *t, FILE *f);
/* Frees the cells; accepts a table that was only initialised. */
void gctl_table_free(gctl_table *t);
/* Ends a table that rows were added to with result r: printed to stdout
 * if r is 0, else "out of memory" on stderr; freed either way.  Returns r. */
int gctl_table_finish(gctl_table *t, int r);

/* Writes s with control characters replaced by '?' (NULL prints "-"). */
void gctl_print_text(FILE *f, const char *s);

/* Cell text for optional values, written into buf when set; "-" when
 * not.  gctl_fmt_fixed prints digits decimals, gctl_fmt_general digits
 * significant digits, gctl_fmt_mb decimal megabytes with two decimals,
 * gctl_fmt_ratio the compression ratio as "12.3x". */
#define GCTL_CELL_MAX 48
const char *gctl_fmt_uint(char buf[GCTL_CELL_MAX], const gsp_opt_uint *v);
const char *gctl_fmt_fixed(char buf[GCTL_CELL_MAX], const gsp_opt_real *v,
			   int digits);
const char *gctl_fmt_general(char buf[GCTL_CELL_MAX], const gsp_opt_real *v,
			     int digits);
const char *gctl_fmt_mb(char buf[GCTL_CELL_MAX], const gsp_opt_uint *bytes);
const char *gctl_fmt_ratio(char buf[GCTL_CELL_MAX], const gsp_sdoc_edge *e);

#endif
