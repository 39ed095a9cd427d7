/*
 * gossipctl: dispatch.  The table below names every subcommand, runs it
 * and prints the usage, as in wireguard-tools' wg.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ipc.h"
#include "subcommands.h"

#ifndef GOSSIPCTL_VERSION
#define GOSSIPCTL_VERSION "unknown"
#endif

const char *gctl_global_socket;

static int help_main(int argc, const char *argv[]);

static const struct {
	const char *name;
	int (*run)(int argc, const char *argv[]);
	const char *description;
} subcommands[] = {
	{ "status", status_main, "Shows the daemon, its model and a summary of its edges" },
	{ "edges", edges_main, "Shows every edge in full: state, rounds, traffic, RTT" },
	{ "members", members_main, "Shows the cluster's members and this node's computed neighbours" },
	{ "leave", leave_main, "Leaves the cluster (the daemon goes on running)" },
	{ "metrics", metrics_main, "Prints the status in the Prometheus text format" },
	{ "genkey", genkey_main, "Generates a new private key and writes it to stdout" },
	{ "pubkey", pubkey_main, "Reads a private key from stdin and writes its public key to stdout" },
	{ "ca-genkey", ca_genkey_main, "Generates a new cluster authority key and writes it to stdout" },
	{ "cert-issue", cert_issue_main, "Signs a member certificate with the authority key" },
	{ "cert-show", cert_show_main, "Shows a member certificate, and verifies it with --ca" },
	{ "revoke", revoke_main, "Signs a revocation list of node keys with the authority key" },
	{ "help", help_main, "Shows this usage, or a subcommand's with help <cmd>" },
};

#define N_SUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void show_usage(FILE *f)
{
	fprintf(f, "Usage: %s [--socket PATH] <cmd> [<args>]\n"
		   "       %s --version | --help\n\n", PROG_NAME, PROG_NAME);
	fprintf(f, "Available subcommands:\n");
	for (size_t i = 0; i < N_SUBCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", subcommands[i].name,
			subcommands[i].description);
	fprintf(f, "\nWithout a subcommand, status is assumed.  --socket PATH names the\n"
		   "daemon's socket (default: $GOSSIPD_SOCKET, else %s).\n"
		   "--version prints the version, --help this text.\n"
		   "Pass --help to any subcommand for its usage.  Exit status: 0 on\n"
		   "success, 1 on a runtime failure, 2 on a usage error.\n",
		GCTL_DEFAULT_SOCKET);
}

int gctl_status_args(int argc, const char *argv[], const char *sub,
		     void (*usage)(FILE *f), const char *flag, bool *ret_flag,
		     const char **ret_socket)
{
	*ret_socket = gctl_global_socket;
	for (int i = 1; i < argc;) {
		int r;
		if (gctl_is_help(argv[i])) {
			usage(stdout);
			return GCTL_EXIT_OK;
		}
		if (flag && !strcmp(argv[i], flag)) {
			*ret_flag = true;
			i++;
			continue;
		}
		r = gctl_socket_option(argc, argv, &i, sub, ret_socket);
		if (r < 0)
			return GCTL_EXIT_USAGE;
		if (r == 0)
			return gctl_usage_error(sub, "unknown argument", argv[i]);
	}
	return -1;
}

bool gctl_is_help(const char *arg)
{
	return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}

int gctl_usage_error(const char *sub, const char *what, const char *arg)
{
	if (arg)
		fprintf(stderr, "%s: %s%s%s: '%s' (see %s%s%s --help)\n", PROG_NAME,
			sub ? sub : "", sub ? ": " : "", what, arg, PROG_NAME,
			sub ? " " : "", sub ? sub : "");
	else
		fprintf(stderr, "%s: %s%s%s (see %s%s%s --help)\n", PROG_NAME,
			sub ? sub : "", sub ? ": " : "", what, PROG_NAME,
			sub ? " " : "", sub ? sub : "");
	return GCTL_EXIT_USAGE;
}

static int find_subcommand(const char *name)
{
	for (size_t i = 0; i < N_SUBCOMMANDS; i++)
		if (!strcmp(name, subcommands[i].name))
			return (int)i;
	return -1;
}

static int help_main(int argc, const char *argv[])
{
	if (argc == 1 || (argc == 2 && gctl_is_help(argv[1]))) {
		show_usage(stdout);
		return GCTL_EXIT_OK;
	}
	if (argc == 2) {
		int k = find_subcommand(argv[1]);
		if (k < 0)
			return gctl_usage_error("help", "unknown subcommand", argv[1]);
		if (subcommands[k].run == help_main) {
			show_usage(stdout);
			return GCTL_EXIT_OK;
		}
		const char *sub_argv[] = { subcommands[k].name, "--help", NULL };
		return subcommands[k].run(2, sub_argv);
	}
	return gctl_usage_error("help", "too many arguments", argv[2]);
}

/* Flushes stdout: output that could not be written is a failure. */
static int finish(int rc)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: cannot write to stdout: %s\n", PROG_NAME,
			strerror(errno));
		return rc == GCTL_EXIT_OK ? GCTL_EXIT_FAILURE : rc;
	}
	return rc;
}

int main(int argc, char *argv[])
{
	const char **args = (const char **)argv;
	int i = 1;

	while (i < argc && args[i][0] == '-') {
		int r;
		if (gctl_is_help(args[i])) {
			show_usage(stdout);
			return finish(GCTL_EXIT_OK);
		}
		if (!strcmp(args[i], "--version")) {
			printf("%s %s\n", PROG_NAME, GOSSIPCTL_VERSION);
			return finish(GCTL_EXIT_OK);
		}
		r = gctl_socket_option(argc, args, &i, NULL, &gctl_global_socket);
		if (r < 0)
			return GCTL_EXIT_USAGE;
		if (r == 0) {
			fprintf(stderr, "%s: unknown option '%s'\n\n", PROG_NAME, args[i]);
			show_usage(stderr);
			return GCTL_EXIT_USAGE;
		}
	}

	if (i == argc) {
		const char *sub_argv[] = { "status", NULL };
		return finish(status_main(1, sub_argv));
	}

	int k = find_subcommand(args[i]);
	if (k < 0) {
		fprintf(stderr, "%s: unknown subcommand '%s'\n\n", PROG_NAME, args[i]);
		show_usage(stderr);
		return GCTL_EXIT_USAGE;
	}
	return finish(subcommands[k].run(argc - i, args + i));
}
