/* gossipctl status: the daemon at a glance (see subcommands.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc.h"
#include "status_doc.h"
#include "subcommands.h"
#include "table.h"

/* Hex digits of the model fingerprint shown (the JSON has all 64). */
#define FINGERPRINT_SHOWN 16
/* Characters of a peer's base64 key shown in the edge summary. */
#define PEER_SHOWN 8

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s status [--json] [--socket PATH]\n\n"
		"Shows the daemon's key, address and default method, its model (with the\n"
		"method, rank and dtype it registered with) and the trainer\n"
		"that registered it, its counters, [Cluster]'s seeds with their current\n"
		"addresses, and one line per edge: the peer (the\n"
		"first %d characters of its key), the state, the round, the megabytes\n"
		"sent and received and the compression ratio against exact gossip;\n"
		"then why each edge that is not up was last refused or closed, if\n"
		"known.  `%s edges` shows every field of every edge.\n\n"
		"  --json         print the daemon's status document (JSON) as it came\n"
		"%s",
		PROG_NAME, PEER_SHOWN, PROG_NAME, GCTL_SOCKET_HELP);
}

/* --json: the document as the daemon sent it, once it parses. */
static int print_json(const char *socket_override)
{
	const char *path = gctl_socket_path(socket_override);
	gsp_sdoc st;
	char err[256];
	size_t len;
	char *json;

	if (gctl_fetch_status(path, &json, &len) < 0)
		return GCTL_EXIT_FAILURE;
	if (gsp_sdoc_parse(json, len, &st, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s: malformed status document from gossipd: %s\n",
			PROG_NAME, path, err);
		free(json);
		return GCTL_EXIT_FAILURE;
	}
	gsp_sdoc_clear(&st);
	fwrite(json, 1, len, stdout);
	if (len == 0 || json[len - 1] != '\n')
		fputc('\n', stdout);
	free(json);
	return GCTL_EXIT_OK;
}

static void print_node(const gsp_sdoc *st)
{
	printf("node:      ");
	gctl_print_text(stdout, st->public_key);
	if (st->version) {
		printf(" (gossipd ");
		gctl_print_text(stdout, st->version);
		putchar(')');
	}
	printf("\nlisten:    ");
	gctl_print_text(stdout, st->listen);
	if (st->socket) {
		printf("\nsocket:    ");
		gctl_print_text(stdout, st->socket);
	}
	printf("\ndefaults:  ");
	gctl_print_text(stdout, st->method);
	if (st->rank.set)
		printf(", rank %" PRIu64, st->rank.v);
	if (st->gamma.set)
		printf(", gamma %g", st->gamma.v);
	putchar('\n');
}

static void print_model(const gsp_sdoc *st)
{
	const gsp_sdoc_model *m = &st->model;

	printf("model:     ");
	if (!st->have_model || (m->registered.set && !m->registered.v)) {
		printf("none registered\n");
		return;
	}
	if (m->summary) {
		gctl_print_text(stdout, m->summary);
	} else {
		char t[GCTL_CELL_MAX], f[GCTL_CELL_MAX];
		printf("%s tensors, %s floats", gctl_fmt_uint(t, &m->tensors),
		       gctl_fmt_uint(f, &m->floats));
	}
	if (m->steps.set)
		printf("; step %" PRIu64, m->steps.v);
	if (m->fingerprint) {
		char fp[FINGERPRINT_SHOWN + 1];
		snprintf(fp, sizeof(fp), "%s", m->fingerprint);
		printf("; fingerprint ");
		gctl_print_text(stdout, fp);
	}
	if (m->trainer && m->trainer[0]) {
		printf("; trainer ");
		gctl_print_text(stdout, m->trainer);
	}
	putchar('\n');
}

static void print_counters(const gsp_sdoc *st)
{
	if (st->n_counters == 0)
		return;
	printf("counters: ");
	for (size_t i = 0; i < st->n_counters; i++) {
		printf("%s", i ? ", " : " ");
		gctl_print_text(stdout, st->counters[i].name);
		printf(" %" PRIu64, st->counters[i].value);
	}
	putchar('\n');
}

/* [Cluster]'s seeds: one line each, its state and addresses. */
static void print_seeds(const gsp_sdoc *st)
{
	if (st->n_seeds == 0)
		return;
	printf("seeds:     %zu", st->n_seeds);
	if (st->seed_addresses.set)
		printf(", %" PRIu64 " address(es) in all", st->seed_addresses.v);
	putchar('\n');
	for (size_t i = 0; i < st->n_seeds; i++) {
		const gsp_sdoc_seed *sd = &st->seeds[i];

		printf("  ");
		gctl_print_text(stdout, sd->seed ? sd->seed : "-");
		printf(" (");
		gctl_print_text(stdout, sd->state ? sd->state : "?");
		printf("):");
		for (size_t k = 0; k < sd->n_addresses; k++) {
			putchar(' ');
			gctl_print_text(stdout, sd->addresses[k]);
		}
		if (sd->n_addresses == 0)
			printf(" none");
		if (sd->last_error) {
			printf("; ");
			gctl_print_text(stdout, sd->last_error);
		}
		putchar('\n');
	}
}

static int print_edges(const gsp_sdoc *st)
{
	static const char *const headers[] = {
		"PEER", "STATE", "ROUND", "SENT_MB", "RECV_MB", "RATIO",
	};
	gctl_table t;
	size_t up = 0;

	for (size_t i = 0; i < st->n_edges; i++)
		if (st->edges[i].state && !strcmp(st->edges[i].state, "up"))
			up++;
	if (st->n_edges == 0) {
		printf("edges:     none\n");
		return 0;
	}
	printf("edges:     %zu (%zu up)\n\n", st->n_edges, up);

	gctl_table_init(&t, 6, headers, "llrrrr");
	for (size_t i = 0; i < st->n_edges; i++) {
		const gsp_sdoc_edge *e = &st->edges[i];
		char peer[PEER_SHOWN + 1] = "-";
		char round[GCTL_CELL_MAX], tx[GCTL_CELL_MAX], rx[GCTL_CELL_MAX],
			ratio[GCTL_CELL_MAX];

		if (e->peer)
			snprintf(peer, sizeof(peer), "%s", e->peer);
		const char *cells[] = {
			peer, gsp_sdoc_edge_state(e), gctl_fmt_uint(round, &e->round),
			gctl_fmt_mb(tx, &e->tx_bytes), gctl_fmt_mb(rx, &e->rx_bytes),
			gctl_fmt_ratio(ratio, e),
		};
		if (gctl_table_add(&t, cells) < 0) {
			gctl_table_free(&t);
			fprintf(stderr, "%s: out of memory\n", PROG_NAME);
			return -1;
		}
	}
	gctl_table_print(&t, stdout);
	gctl_table_free(&t);
	/* Why the edges that are not up are down, when the daemon knows. */
	for (size_t i = 0; i < st->n_edges; i++) {
		const gsp_sdoc_edge *e = &st->edges[i];
		char peer[PEER_SHOWN + 1] = "-";

		if (!e->last_error || (e->state && !strcmp(e->state, "up")))
			continue;
		if (e->peer)
			snprintf(peer, sizeof(peer), "%s", e->peer);
		printf("%s: ", peer);
		gctl_print_text(stdout, e->last_error);
		putchar('\n');
	}
	return 0;
}

int status_main(int argc, const char *argv[])
{
	const char *socket_override;
	bool json = false;
	gsp_sdoc st;
	int rc = GCTL_EXIT_OK;

	int done = gctl_status_args(argc, argv, "status", usage, "--json", &json,
				    &socket_override);
	if (done >= 0)
		return done;

	if (json)
		return print_json(socket_override);
	if (gctl_status_load(socket_override, &st) < 0)
		return GCTL_EXIT_FAILURE;
	print_node(&st);
	print_model(&st);
	print_counters(&st);
	print_seeds(&st);
	if (print_edges(&st) < 0)
		rc = GCTL_EXIT_FAILURE;
	gsp_sdoc_clear(&st);
	return rc;
}
