/*
 * gossipctl: the command-line control tool of gossipd, shaped like
 * wireguard-tools' wg.  Each subcommand lives in its own file and exports
 * one <name>_main(); main.c's table dispatches to them and prints the
 * usage from the same table.
 *
 * Every subcommand returns an exit code: GCTL_EXIT_OK, GCTL_EXIT_FAILURE
 * (a runtime failure, already reported on stderr) or GCTL_EXIT_USAGE (a
 * usage error, reported with a pointer to --help).
 */
#ifndef GOSSIPCTL_SUBCOMMANDS_H
#define GOSSIPCTL_SUBCOMMANDS_H

#include <stdbool.h>
#include <stdio.h>

/* Fixed rather than argv[0], so that messages read the same however the
 * tool was started. */
#define PROG_NAME "gossipctl"

enum {
	GCTL_EXIT_OK = 0,
	GCTL_EXIT_FAILURE = 1,
	GCTL_EXIT_USAGE = 2,
};

/* The --socket given before the subcommand, or NULL; a subcommand's own
 * --socket overrides it.  Set by main() only. */
extern const char *gctl_global_socket;

int status_main(int argc, const char *argv[]);
int edges_main(int argc, const char *argv[]);
int members_main(int argc, const char *argv[]);
int leave_main(int argc, const char *argv[]);
int metrics_main(int argc, const char *argv[]);
int genkey_main(int argc, const char *argv[]);
int pubkey_main(int argc, const char *argv[]);
int ca_genkey_main(int argc, const char *argv[]);
int cert_issue_main(int argc, const char *argv[]);
int cert_show_main(int argc, const char *argv[]);
int revoke_main(int argc, const char *argv[]);

/* The arguments of a subcommand that reads the status document: --help
 * (prints usage), --socket PATH, and an optional boolean flag (NULL for
 * none), which sets *ret_flag.  Returns -1 to go on, or the exit code
 * the subcommand should return now. */
int gctl_status_args(int argc, const char *argv[], const char *sub,
		     void (*usage)(FILE *f), const char *flag, bool *ret_flag,
		     const char **ret_socket);

/* Matches argv[*i] against the option name ("--name VALUE" or
 * "--name=VALUE"): 1 with *ret_value set and *i moved past it, 0 if it is
 * another argument, -1 after reporting a missing or empty value. */
int gctl_option(int argc, const char *argv[], int *i, const char *sub,
		const char *name, const char **ret_value);

/* Matches "--help" and "-h". */
bool gctl_is_help(const char *arg);

/* Reports a usage error ("gossipctl: <sub>: <what>") with a pointer to
 * --help on stderr and returns GCTL_EXIT_USAGE. */
int gctl_usage_error(const char *sub, const char *what, const char *arg);

#endif
