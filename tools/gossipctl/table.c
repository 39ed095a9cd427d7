/* Aligned text tables (see table.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "subcommands.h"
#include "table.h"

static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

static char *sanitized_copy(const char *s)
{
	char *copy = strdup(s ? s : "-");

	if (copy)
		for (char *p = copy; *p; p++)
			if (is_control((unsigned char)*p))
				*p = '?';
	return copy;
}

void gctl_table_init(gctl_table *t, size_t n_cols, const char *const *headers,
		     const char *align)
{
	memset(t, 0, sizeof(*t));
	t->n_cols = n_cols;
	t->headers = headers;
	t->align = align;
}

int gctl_table_add(gctl_table *t, const char *const *cells)
{
	if (t->n_rows == t->cap_rows) {
		size_t cap = t->cap_rows ? 2 * t->cap_rows : 8;
		char **grown = realloc(t->cells, cap * t->n_cols * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		t->cells = grown;
		t->cap_rows = cap;
	}
	char **row = t->cells + t->n_rows * t->n_cols;
	for (size_t c = 0; c < t->n_cols; c++) {
		char *cell = sanitized_copy(cells[c]);
		if (!cell) {
			while (c > 0)
				free(row[--c]);
			return -ENOMEM;
		}
		row[c] = cell;
	}
	t->n_rows++;
	return 0;
}

static void print_cell(FILE *f, const char *s, size_t width, char align,
		       bool last)
{
	size_t len = strlen(s);
	size_t pad = width > len ? width - len : 0;

	if (align == 'r')
		fprintf(f, "%*s%s", (int)pad, "", s);
	else if (last)
		fputs(s, f);
	else
		fprintf(f, "%s%*s", s, (int)pad, "");
	fputs(last ? "\n" : "  ", f);
}

void gctl_table_print(const gctl_table *t, FILE *f)
{
	size_t *width = calloc(t->n_cols ? t->n_cols : 1, sizeof(*width));

	if (!width)
		return;
	for (size_t c = 0; c < t->n_cols; c++) {
		width[c] = strlen(t->headers[c]);
		for (size_t r = 0; r < t->n_rows; r++) {
			size_t len = strlen(t->cells[r * t->n_cols + c]);
			if (len > width[c])
				width[c] = len;
		}
	}
	for (size_t c = 0; c < t->n_cols; c++)
		print_cell(f, t->headers[c], width[c], t->align[c],
			   c + 1 == t->n_cols);
	for (size_t r = 0; r < t->n_rows; r++)
		for (size_t c = 0; c < t->n_cols; c++)
			print_cell(f, t->cells[r * t->n_cols + c], width[c],
				   t->align[c], c + 1 == t->n_cols);
	free(width);
}

void gctl_table_free(gctl_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->n_rows = t->cap_rows = 0;
}

int gctl_table_finish(gctl_table *t, int r)
{
	if (r == 0)
		gctl_table_print(t, stdout);
	else
		fprintf(stderr, "%s: out of memory\n", PROG_NAME);
	gctl_table_free(t);
	return r;
}

void gctl_print_text(FILE *f, const char *s)
{
	if (!s) {
		fputc('-', f);
		return;
	}
	for (; *s; s++)
		fputc(is_control((unsigned char)*s) ? '?' : *s, f);
}

const char *gctl_fmt_uint(char buf[GCTL_CELL_MAX], const gsp_opt_uint *v)
{
	if (!v->set)
		return "-";
	snprintf(buf, GCTL_CELL_MAX, "%" PRIu64, v->v);
	return buf;
}

const char *gctl_fmt_fixed(char buf[GCTL_CELL_MAX], const gsp_opt_real *v,
			   int digits)
{
	if (!v->set)
		return "-";
	snprintf(buf, GCTL_CELL_MAX, "%.*f", digits, v->v);
	return buf;
}

const char *gctl_fmt_general(char buf[GCTL_CELL_MAX], const gsp_opt_real *v,
			     int digits)
{
	if (!v->set)
		return "-";
	snprintf(buf, GCTL_CELL_MAX, "%.*g", digits, v->v);
	return buf;
}

const char *gctl_fmt_mb(char buf[GCTL_CELL_MAX], const gsp_opt_uint *bytes)
{
	if (!bytes->set)
		return "-";
	snprintf(buf, GCTL_CELL_MAX, "%.2f", (double)bytes->v / 1e6);
	return buf;
}

const char *gctl_fmt_ratio(char buf[GCTL_CELL_MAX], const gsp_sdoc_edge *e)
{
	double ratio;

	if (!gsp_sdoc_edge_ratio(e, &ratio))
		return "-";
	snprintf(buf, GCTL_CELL_MAX, "%.1fx", ratio);
	return buf;
}
