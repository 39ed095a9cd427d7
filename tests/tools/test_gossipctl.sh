#!/bin/sh
# gossipctl end to end: genkey and pubkey, the authority's subcommands
# (ca-genkey, cert-issue, cert-show, revoke), usage and exit codes, and the
# daemon subcommands against a fake gossipd (a stdlib-only Python script
# that serves canned HELLO_OK / STATUS_OK replies on Unix sockets in a
# temporary directory; readiness through a FIFO, no sleeps).
#
# Usage: test_gossipctl.sh PATH/TO/gossipctl   (PYTHON3 in the environment;
# exit 77, "skipped", without it).  Prints one "ok"/"not ok" line per check
# and "N passed, N failed" at the end.
set -u

G=$1
PY=${PYTHON3:-}
# The exposition checker, shared with tests/install/test_service.py.
CHECK_PROM=$(dirname "$0")/check_prom.py
# gossipctl metrics' text for the fake daemon's documents as the
# gossipctl before libgossip's prom_text.c printed it: the move (the
# writer gossipd's metrics listener shares) changed no byte.
PROM_EXPECTED=$(dirname "$0")/prom
# The protocol version gossipctl speaks, from its one place (proto.h).
PROTO_H=$(dirname "$0")/../../proto/proto.h
PROTO_VERSION=$(sed -n 's/^#define GSP_PROTO_VERSION_MAJOR \([0-9]*\)$/\1/p' "$PROTO_H").$(
	sed -n 's/^#define GSP_PROTO_VERSION_MINOR \([0-9]*\)$/\1/p' "$PROTO_H")
if [ -z "$PY" ] || ! "$PY" -c 'import sys' >/dev/null 2>&1; then
	echo "python3 not found: skipping"
	exit 77
fi
# The exact error texts below are the C locale's.
LC_ALL=C
export LC_ALL
unset GOSSIPD_SOCKET

T=$(mktemp -d "${TMPDIR:-/tmp}/gossipctl-test.XXXXXX") || exit 1
fake_pid=
cleanup() {
	if [ -n "$fake_pid" ]; then
		kill "$fake_pid" 2>/dev/null
		wait "$fake_pid" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

passed=0
failed=0
ok() {
	passed=$((passed + 1))
	echo "ok - $1"
}
not_ok() {
	failed=$((failed + 1))
	echo "not ok - $1"
	for f in "$T/out" "$T/err"; do
		[ -s "$f" ] && sed "s|^|#   $(basename "$f"): |" "$f" | head -40
	done
	return 0
}

# run CMD...: stdout to $T/out, stderr to $T/err, exit code in $rc.  A
# sanitizer report fails the check that follows.
run() {
	"$@" >"$T/out" 2>"$T/err"
	rc=$?
	if grep -q -e 'Sanitizer' -e 'runtime error' "$T/err"; then
		rc="$rc+sanitizer"
	fi
}
# expect NAME RC [STDERR]: the exit code, and stderr exactly when given.
expect() {
	if [ "$rc" != "$2" ]; then
		not_ok "$1: exit $rc, expected $2"
	elif [ $# -ge 3 ] && [ "$(cat "$T/err")" != "$3" ]; then
		not_ok "$1: stderr is not '$3'"
	else
		ok "$1"
	fi
}
# expect_out NAME FILE: stdout equals FILE.
expect_out() {
	if cmp -s "$T/out" "$2"; then
		ok "$1"
	else
		not_ok "$1: stdout differs from the expected text"
		diff -u "$2" "$T/out" | sed 's/^/#   /'
	fi
}
# expect_grep NAME REGEX: some line of stdout matches.
expect_grep() {
	if grep -q -E -e "$2" "$T/out"; then
		ok "$1"
	else
		not_ok "$1: no line of stdout matches '$2'"
	fi
}
# expect_line NAME LINE: some line of stdout is exactly LINE.
expect_line() {
	if grep -q -x -F -e "$2" "$T/out"; then
		ok "$1"
	else
		not_ok "$1: no line of stdout is '$2'"
	fi
}

# ---- genkey and pubkey --------------------------------------------------

B64_KEY='^[A-Za-z0-9+/]{43}=$'

run "$G" genkey
expect "genkey exits 0" 0
priv=$(cat "$T/out")
if printf '%s\n' "$priv" | grep -q -E "$B64_KEY" && [ "$(wc -l <"$T/out")" -eq 1 ]; then
	ok "genkey prints one 44-character base64 key"
else
	not_ok "genkey prints one 44-character base64 key"
fi
run "$G" genkey
if [ "$(cat "$T/out")" != "$priv" ]; then
	ok "genkey prints a new key each time"
else
	not_ok "genkey prints a new key each time"
fi

printf '%s\n' "$priv" >"$T/priv"
run "$G" pubkey <"$T/priv"
expect "pubkey exits 0" 0
pub=$(cat "$T/out")
if printf '%s\n' "$pub" | grep -q -E "$B64_KEY" && [ "$pub" != "$priv" ]; then
	ok "pubkey of genkey's key is a 44-character base64 key"
else
	not_ok "pubkey of genkey's key is a 44-character base64 key"
fi
run "$G" pubkey <"$T/priv"
if [ "$(cat "$T/out")" = "$pub" ]; then
	ok "pubkey is deterministic"
else
	not_ok "pubkey is deterministic"
fi
printf '%s' "$priv" >"$T/priv-no-newline"
run "$G" pubkey <"$T/priv-no-newline"
if [ "$rc" = 0 ] && [ "$(cat "$T/out")" = "$pub" ]; then
	ok "pubkey accepts a key without its newline"
else
	not_ok "pubkey accepts a key without its newline"
fi

# RFC 7748, section 6.1: Alice's X25519 key pair.
printf 'dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=\n' >"$T/alice"
run "$G" pubkey <"$T/alice"
if [ "$rc" = 0 ] &&
   [ "$(cat "$T/out")" = "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo=" ]; then
	ok "pubkey matches the RFC 7748 test vector"
else
	not_ok "pubkey matches the RFC 7748 test vector"
fi

BAD_KEY="gossipctl: pubkey: stdin does not hold a private key (44 base64 characters and at most one newline)"
i=0
for bad in '' 'notakey' \
	'dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo= ' \
	' dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=' \
	'dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo' \
	'dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCp=' \
	'dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LC==' \
	'dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=AAAA' \
	'dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LC-='; do
	i=$((i + 1))
	printf '%s\n' "$bad" >"$T/bad"
	run "$G" pubkey <"$T/bad"
	expect "pubkey rejects bad input $i ('$bad')" 1 "$BAD_KEY"
done
printf 'dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=\n\n' >"$T/bad"
run "$G" pubkey <"$T/bad"
expect "pubkey rejects a second newline" 1 "$BAD_KEY"
printf 'dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=\r\n' >"$T/bad"
run "$G" pubkey <"$T/bad"
expect "pubkey rejects CRLF" 1 "$BAD_KEY"
printf 'dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7\0R25LCo=\n' >"$T/bad"
run "$G" pubkey <"$T/bad"
expect "pubkey rejects a NUL byte" 1 "$BAD_KEY"
# 44 bytes, two of them UTF-8 for e-acute: not the base64 alphabet.
printf 'dwdtCnMYpX08FsFy\303\251JmRd9ML4frwJkqsXf7pR25LCo=\n' >"$T/bad"
run "$G" pubkey <"$T/bad"
expect "pubkey rejects a byte above 0x7f" 1 "$BAD_KEY"
head -c 100000 /dev/zero | tr '\0' 'A' >"$T/bad"
run "$G" pubkey <"$T/bad"
expect "pubkey rejects long input" 1 "$BAD_KEY"

WARN="gossipctl: warning: writing a private key to a file that group or others can access (use umask 077)"
(umask 022 && "$G" genkey >"$T/k644" 2>"$T/err")
rc=$?
expect "genkey warns when the file is readable by others" 0 "$WARN"
(umask 077 && "$G" genkey >"$T/k600" 2>"$T/err")
rc=$?
expect "genkey is silent when only the owner can read the file" 0 ""
if grep -q -E "$B64_KEY" "$T/k600"; then
	ok "genkey writes the key to the file"
else
	not_ok "genkey writes the key to the file"
fi

run "$G" genkey extra
expect "genkey with an argument is a usage error" 2
run "$G" pubkey extra </dev/null
expect "pubkey with an argument is a usage error" 2

# ---- the cluster authority: certificates and revocation ------------------

(umask 077 && "$G" ca-genkey >"$T/ca.key" 2>"$T/err")
rc=$?
expect "ca-genkey exits 0, silent for a 0600 file" 0 ""
if grep -q -E "$B64_KEY" "$T/ca.key" && [ "$(wc -l <"$T/ca.key")" -eq 1 ]; then
	ok "ca-genkey writes one 44-character base64 key"
else
	not_ok "ca-genkey writes one 44-character base64 key"
fi
(umask 022 && "$G" ca-genkey >"$T/ca644.key" 2>"$T/err")
rc=$?
expect "ca-genkey warns when the file is readable by others" 0 "$WARN"
run "$G" ca-genkey extra
expect "ca-genkey with an argument is a usage error" 2
run "$G" pubkey --ca <"$T/ca.key"
expect "pubkey --ca exits 0" 0 ""
ca_pub=$(cat "$T/out")
run "$G" pubkey --ca <"$T/ca644.key"
other_pub=$(cat "$T/out")
if [ "$ca_pub" != "$other_pub" ] && printf '%s\n' "$ca_pub" | grep -q -E "$B64_KEY"; then
	ok "pubkey --ca gives each authority its own public key"
else
	not_ok "pubkey --ca gives each authority its own public key"
fi
run "$G" pubkey --signing <"$T/priv"
signing=$(cat "$T/out")
if [ "$rc" = 0 ] && [ "$signing" != "$pub" ] &&
   printf '%s\n' "$signing" | grep -q -E "$B64_KEY"; then
	ok "pubkey --signing prints the node's signing key, not its public key"
else
	not_ok "pubkey --signing prints the node's signing key, not its public key"
fi

run "$G" cert-issue --ca "$T/ca.key" --name node-1.example --pubkey "$pub" \
	--signing-key "$signing" --days 30
expect "cert-issue exits 0" 0 ""
cp "$T/out" "$T/node.cert"
if [ "$(wc -l <"$T/node.cert")" -eq 1 ] &&
   grep -q -E '^[A-Za-z0-9+/]+={0,2}$' "$T/node.cert"; then
	ok "cert-issue prints one base64 line"
else
	not_ok "cert-issue prints one base64 line"
fi
run "$G" cert-show "$T/node.cert"
expect "cert-show exits 0" 0 ""
expect_grep "cert-show shows the name" '^name: +node-1\.example$'
expect_line "cert-show shows the node key" "node key:    $pub"
expect_line "cert-show shows the signing key" "signing key: $signing"
expect_line "cert-show shows the authority" "authority:   $ca_pub"
nb=$(sed -n 's/^not before:.*(\([0-9]*\))$/\1/p' "$T/out")
na=$(sed -n 's/^expires:.*(\([0-9]*\))$/\1/p' "$T/out")
if [ -n "$nb" ] && [ -n "$na" ] && [ $((na - nb)) -eq $((30 * 86400)) ]; then
	ok "cert-show shows a validity of --days 30"
else
	not_ok "cert-show shows a validity of --days 30 ($nb, $na)"
fi
run "$G" cert-show --ca "$ca_pub" - <"$T/node.cert"
expect "cert-show --ca verifies the certificate (from stdin)" 0 ""
expect_grep "cert-show --ca says it is valid" '^valid: +yes$'
run "$G" cert-show --ca "$other_pub" "$T/node.cert"
expect "cert-show --ca of another authority fails with the reason" 1 \
	"gossipctl: cert-show: $T/node.cert: not valid: not signed by the authority (or a bad signature)"
run "$G" cert-show --ca "$ca_pub" --now "$((na))" "$T/node.cert"
expect "cert-show at its expiry fails with the reason" 1 \
	"gossipctl: cert-show: $T/node.cert: not valid: expired"
run "$G" cert-show --ca "$ca_pub" --now "$((nb - 1))" "$T/node.cert"
expect "cert-show before its not-before fails with the reason" 1 \
	"gossipctl: cert-show: $T/node.cert: not valid: not valid yet (before its not-before time)"
run "$G" cert-issue --ca "$T/ca.key" --name short --pubkey "$pub" \
	--signing-key "$signing" --seconds 90
expect "cert-issue --seconds exits 0" 0 ""
cp "$T/out" "$T/short.cert"
run "$G" cert-show "$T/short.cert"
nb=$(sed -n 's/^not before:.*(\([0-9]*\))$/\1/p' "$T/out")
na=$(sed -n 's/^expires:.*(\([0-9]*\))$/\1/p' "$T/out")
if [ -n "$nb" ] && [ -n "$na" ] && [ $((na - nb)) -eq 90 ]; then
	ok "cert-show shows a validity of --seconds 90"
else
	not_ok "cert-show shows a validity of --seconds 90 ($nb, $na)"
fi

other_node=ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=
run "$G" revoke --ca "$T/ca.key" --serial 1 "$other_node"
expect "revoke exits 0" 0 ""
cp "$T/out" "$T/revoked-other"
run "$G" cert-show --ca "$ca_pub" --revoked "$T/revoked-other" "$T/node.cert"
expect "a list without the node's key leaves it valid" 0 ""
expect_grep "cert-show shows the list's serial and size" '^revoked: +serial 1, 1 keys$'
run "$G" revoke --ca "$T/ca.key" --serial 2 "$pub" "$other_node" "$pub"
expect "revoke of the node's key exits 0" 0 ""
cp "$T/out" "$T/revoked"
run "$G" cert-show --ca "$ca_pub" --revoked "$T/revoked" "$T/node.cert"
expect "cert-show with the node's key revoked fails with the reason" 1 \
	"gossipctl: cert-show: $T/node.cert: not valid: revoked by the authority"
expect_grep "a key given twice is listed once" '^revoked: +serial 2, 2 keys$'
run "$G" revoke --ca "$T/ca644.key" --serial 3 "$pub"
cp "$T/out" "$T/revoked-foreign"
run "$G" cert-show --ca "$ca_pub" --revoked "$T/revoked-foreign" "$T/node.cert"
expect "a revocation list of another authority is refused" 1 \
	"gossipctl: cert-show: $T/revoked-foreign: the revocation list is not signed by the authority"

# Refusals: malformed certificates, bad arguments, missing files.
cut -c 1-40 "$T/node.cert" >"$T/short.cert"
run "$G" cert-show "$T/short.cert"
expect "cert-show refuses a truncated certificate" 1 \
	"gossipctl: cert-show: $T/short.cert: not a certificate: the input ends before the format does"
tr 'A-Za-z' 'N-ZA-Mn-za-m' <"$T/node.cert" >"$T/rot.cert"
run "$G" cert-show --ca "$ca_pub" "$T/rot.cert"
expect "cert-show refuses a garbled certificate" 1
printf '%s' "$(cat "$T/node.cert")" >"$T/no-newline.cert"
run "$G" cert-show --ca "$ca_pub" "$T/no-newline.cert"
expect "cert-show accepts a certificate without its newline" 0 ""
run "$G" cert-show "$T/missing.cert"
expect "cert-show of a missing file exits 1" 1 \
	"gossipctl: cert-show: cannot read $T/missing.cert: No such file or directory"
run "$G" cert-issue --ca "$T/ca.key" --name 'a b' --pubkey "$pub" --signing-key "$signing"
expect "cert-issue refuses a name outside the set" 2 \
	"gossipctl: cert-issue: --name has a character outside A-Z a-z 0-9 . _ -: 'a b' (see gossipctl cert-issue --help)"
run "$G" cert-issue --ca "$T/ca.key" --name "$(printf '%065d' 0)" --pubkey "$pub" --signing-key "$signing"
expect "cert-issue refuses a name of 65 characters" 2
run "$G" cert-issue --ca "$T/ca.key" --name n --pubkey notakey --signing-key "$signing"
expect "cert-issue refuses a bad --pubkey" 2
run "$G" cert-issue --ca "$T/ca.key" --name n --pubkey "$pub" --signing-key "$signing" --days 0
expect "cert-issue refuses --days 0" 2
run "$G" cert-issue --ca "$T/ca.key" --name n --pubkey "$pub" --signing-key "$signing" --seconds 0
expect "cert-issue refuses --seconds 0" 2
run "$G" cert-issue --ca "$T/ca.key" --name n --pubkey "$pub" --signing-key "$signing" \
	--days 1 --seconds 5
expect "cert-issue refuses --days with --seconds" 2
run "$G" cert-issue --ca "$T/ca.key" --name n --pubkey "$pub"
expect "cert-issue without --signing-key is a usage error" 2
run "$G" cert-issue --ca "$T/missing.key" --name n --pubkey "$pub" --signing-key "$signing"
expect "cert-issue without its authority key file exits 1" 1 \
	"gossipctl: cert-issue: cannot read the authority key $T/missing.key: No such file or directory"
run "$G" cert-issue --ca "$T/node.cert" --name n --pubkey "$pub" --signing-key "$signing"
expect "cert-issue with a file that is not a key exits 1" 1 \
	"gossipctl: cert-issue: $T/node.cert does not hold an authority key (44 base64 characters and at most one newline)"
run "$G" cert-show --revoked "$T/revoked" "$T/node.cert"
expect "cert-show --revoked without --ca is a usage error" 2
run "$G" revoke --ca "$T/ca.key" --serial -1 "$pub"
expect "revoke refuses a negative serial" 2
run "$G" revoke --ca "$T/ca.key" --serial 1 notakey
expect "revoke refuses a bad key" 2

# ---- usage and exit codes -----------------------------------------------

for args in "--help" "-h" "help"; do
	run "$G" $args
	expect "gossipctl $args exits 0" 0 ""
	for sub in status edges metrics genkey pubkey ca-genkey cert-issue cert-show revoke help; do
		if ! grep -q "^  $sub " "$T/out"; then
			not_ok "gossipctl $args lists $sub"
		fi
	done
	expect_grep "gossipctl $args shows --version" '--version'
done
run "$G" edges --help
for state in down connecting handshake idle up straggler; do
	expect_grep "gossipctl edges --help names the state $state" "[ (]$state[,:]"
done
for sub in status edges metrics genkey pubkey ca-genkey cert-issue cert-show revoke; do
	run "$G" "$sub" --help
	expect "gossipctl $sub --help exits 0" 0 ""
	expect_grep "gossipctl $sub --help shows its usage" "^Usage: gossipctl $sub"
	run "$G" help "$sub"
	expect_grep "gossipctl help $sub shows its usage" "^Usage: gossipctl $sub"
done
run "$G" frobnicate
expect "an unknown subcommand is a usage error" 2
run "$G" --frobnicate
expect "an unknown option is a usage error" 2
run "$G" status --frobnicate
expect "an unknown status option is a usage error" 2 \
	"gossipctl: status: unknown argument: '--frobnicate' (see gossipctl status --help)"
run "$G" --socket
expect "--socket without a path is a usage error" 2
run "$G" edges --socket=
expect "--socket= with an empty path is a usage error" 2
run "$G" help frobnicate
expect "help of an unknown subcommand is a usage error" 2
run "$G" --version
expect_grep "--version prints the version" '^gossipctl [0-9]'

# ---- no daemon ----------------------------------------------------------

missing="$T/missing.sock"
run "$G" --socket "$missing" status
expect "status without a daemon exits 1" 1 \
	"gossipctl: cannot connect to $missing: No such file or directory (is gossipd running?)"
run env GOSSIPD_SOCKET="$missing" "$G" edges
expect "GOSSIPD_SOCKET names the socket" 1 \
	"gossipctl: cannot connect to $missing: No such file or directory (is gossipd running?)"
run env GOSSIPD_SOCKET="$T/other.sock" "$G" --socket "$missing" metrics
expect "--socket overrides GOSSIPD_SOCKET" 1 \
	"gossipctl: cannot connect to $missing: No such file or directory (is gossipd running?)"
if [ ! -e /run/gossipd/gossipd.sock ]; then
	run "$G" status
	expect "the default socket is /run/gossipd/gossipd.sock" 1 \
		"gossipctl: cannot connect to /run/gossipd/gossipd.sock: No such file or directory (is gossipd running?)"
fi
: >"$T/not-a-socket"
run "$G" --socket "$T/not-a-socket" status
expect "a file that is not a socket exits 1" 1 \
	"gossipctl: cannot connect to $T/not-a-socket: Connection refused (is gossipd running?)"
long=$(printf '%0200d' 0)
run "$G" --socket "$T/$long" status
expect "an over-long socket path exits 1" 1

# ---- the fake daemon ----------------------------------------------------

cat >"$T/fake.py" <<'PYEOF'
"""A fake gossipd: one Unix socket per scenario in DIR, each answering
HELLO and STATUS with canned replies (proto/PROTOCOL.md, "Local API")."""
import json
import os
import selectors
import socket
import struct
import sys

d = sys.argv[1]
A = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
B = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="
C = "QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8="
D = "YGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn8="
E = "gIGCg4SFhoeIiYqLjI2Oj5CRkpOUlZaXmJmam5ydnp8="
DOC = {
    "version": "0.1.0",
    "public_key": "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo=",
    "listen": "127.0.0.1:7000",
    "socket": "/run/gossipd/gossipd.sock",
    "method": "powergossip",
    "rank": 4,
    "gamma": 1.0,
    "future_field": {"nested": [1, 2, {"x": None}]},
    "model": {
        "registered": True,
        "tensors": 3,
        "floats": 40064,
        "fingerprint": "00112233445566778899aabbccddeeff"
                       "00112233445566778899aabbccddeeff",
        "steps": 123,
        "summary": 'powergossip r4, 3 tensors, 40064 floats "q" \\ \x1b[31m',
        "consensus_estimate": 0.0125,
        "future_model_field": "ignored",
    },
    "counters": {
        "rx_malformed": 1,
        "hs_refused": 2,
        "hs_replayed": 3,
        "links_closed": 4,
        "api_malformed": 5,
        "version_mismatch": 6,
        "a-b c": 7,
        "a_b_c": 8,
        "note": "not a number: ignored",
    },
    "edges": [
        {"peer": A, "endpoint": "127.0.0.1:7001", "state": "up",
         "generation": 1, "round": 57, "staleness": 0,
         "tx_bytes": 1000, "rx_bytes": 1000, "tx_frames": 10,
         "rx_frames": 10, "exact_bytes": 160000, "message_bytes": 800,
         "rounds": 55, "resyncs": 2, "rtt_ms": 0.21, "rounds_per_s": 12.5,
         "diff_norm": 0.05, "future_edge_field": {"a": 1}},
        {"peer": B, "endpoint": "[::1]:7002", "state": "connecting",
         "generation": 2, "round": 0, "staleness": 3,
         "tx_bytes": 109, "rx_bytes": 0, "tx_frames": 2, "rx_frames": 0,
         "exact_bytes": 0, "rtt_ms": None, "diff_norm": None},
        {"peer": C, "state": "handshake",
         "generation": 7, "round": 123456, "staleness": 1,
         "tx_bytes": 123456789012, "rx_bytes": 98765432109,
         "tx_frames": 4000000, "rx_frames": 3999999,
         "exact_bytes": 1234567890120, "rtt_ms": 12, "diff_norm": 1.5e-7},
        {"peer": D, "endpoint": "127.0.0.1:7004", "state": "idle",
         "generation": 0, "round": 0, "staleness": 0,
         "tx_bytes": 0, "rx_bytes": 0, "tx_frames": 0, "rx_frames": 0,
         "exact_bytes": 0, "message_bytes": 0, "rounds": 0,
         "rtt_ms": None, "diff_norm": None},
        # A state gossipctl does not know; the new names of the bytes
        # only (the others above have the old ones only).
        {"peer": E, "state": "draining",
         "generation": 1, "round": 2, "staleness": 0,
         "payload_tx_bytes": 4, "wire_tx_bytes": 5, "wire_rx_bytes": 6,
         "tx_frames": 1, "rx_frames": 1,
         "exact_bytes": 0, "rtt_ms": None, "diff_norm": None},
    ],
}
DOC_TEXT = json.dumps(DOC)
MIN_TEXT = '{"version":"0.1.0","model":{"registered":false},"edges":[]}'


def frame(body):
    return struct.pack("<I", len(body)) + body


def hello_ok(version=0x0100, name=b"gossipd 0.1.0"):
    return frame(bytes([0xC0]) + struct.pack("<HH", version, len(name)) + name)


def status_ok(text):
    b = text.encode()
    return frame(bytes([0xC4]) + struct.pack("<I", len(b)) + b)


def error(code, text):
    b = text.encode()
    return frame(bytes([0xFF]) + struct.pack("<iH", code, len(b)) + b)


# Replies to HELLO and to STATUS; None closes the connection instead.
SCENARIOS = {
    "ok": (hello_ok(), status_ok(DOC_TEXT)),
    "min": (hello_ok(), status_ok(MIN_TEXT)),
    "straggler": (hello_ok(), status_ok(json.dumps({"edges": [
        {"peer": A, "state": "up", "straggler": True},
        {"peer": B, "state": "up", "straggler": False}]}))),
    "refuse": (hello_ok(), error(-1, "not today")),
    "major": (hello_ok(0x0200, b"gossipd 2.0"), None),
    "badjson": (hello_ok(), status_ok('{"edges": [')),
    "badtype": (hello_ok(), status_ok('{"edges":[{"peer":"x","round":"57"}]}')),
    "badroot": (hello_ok(), status_ok('[1, 2]')),
    "zero": (b"\0\0\0\0", None),
    "huge": (struct.pack("<I", (1 << 20) + 1), None),
    "hangup": (None, None),
    "reply": (hello_ok(), frame(bytes([0xC1]))),
}
def is_hello(body):
    """A HELLO of protocol major 1 (any minor) from gossipctl."""
    return (len(body) == 14 and body[0] == 0x40 and body[2] == 1
            and body[3:] == struct.pack("<H", 9) + b"gossipctl")


def read_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def read_frame(conn):
    (n,) = struct.unpack("<I", read_exact(conn, 4))
    return read_exact(conn, n)


def serve(conn, replies):
    conn.settimeout(10)
    if not is_hello(read_frame(conn)):
        conn.sendall(error(-71, "unexpected HELLO"))
        return
    if replies[0] is None:
        return
    conn.sendall(replies[0])
    if replies[1] is None:
        return
    if read_frame(conn) != bytes([0x44]):
        conn.sendall(error(-71, "unexpected STATUS"))
        return
    conn.sendall(replies[1])


with open(os.path.join(d, "doc.json"), "w") as f:
    f.write(DOC_TEXT + "\n")
sel = selectors.DefaultSelector()
for name, replies in SCENARIOS.items():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(d, name + ".sock"))
    s.listen(8)
    sel.register(s, selectors.EVENT_READ, replies)
print("ready", flush=True)
while True:
    events = sel.select(timeout=50)
    if not events:
        sys.exit("fake gossipd: idle for 50 s, exiting")
    for key, _ in events:
        conn, _ = key.fileobj.accept()
        try:
            serve(conn, key.data)
        except (EOFError, OSError) as e:
            print("fake gossipd:", repr(e), file=sys.stderr)
        finally:
            conn.close()
PYEOF

mkfifo "$T/ready" || exit 1
"$PY" "$T/fake.py" "$T" >"$T/ready" 2>"$T/fake.err" &
fake_pid=$!
ready=
read -r ready <"$T/ready"
if [ "$ready" != "ready" ]; then
	echo "fake gossipd did not start:"
	cat "$T/fake.err"
	exit 1
fi
S=$T/ok.sock

# status: the human table.
A8=AAECAwQF
B8=ICEiIyQl
C8=QEFCQ0RF
D8=YGFiY2Rl
E8=gIGCg4SF
cat >"$T/expect-status" <<EOF
node:      hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo= (gossipd 0.1.0)
listen:    127.0.0.1:7000
socket:    /run/gossipd/gossipd.sock
defaults:  powergossip, rank 4, gamma 1
model:     powergossip r4, 3 tensors, 40064 floats "q" \\ ?[31m; step 123; fingerprint 0011223344556677
counters:  rx_malformed 1, hs_refused 2, hs_replayed 3, links_closed 4, api_malformed 5, version_mismatch 6, a-b c 7, a_b_c 8
edges:     5 (1 up)

PEER      STATE        ROUND    SENT_MB   RECV_MB   RATIO
$A8  up              57       0.00      0.00  160.0x
$B8  connecting       0       0.00      0.00       -
$C8  handshake   123456  123456.79  98765.43   10.0x
$D8  idle             0       0.00      0.00       -
$E8  draining         2       0.00      0.00       -
EOF
run "$G" --socket "$S" status
expect "status exits 0" 0 ""
expect_out "status prints the node, model, counters and edge table" "$T/expect-status"
run "$G" status --socket "$S"
expect_out "--socket also works after the subcommand" "$T/expect-status"
run "$G" --socket="$S"
expect_out "no subcommand means status" "$T/expect-status"
run env GOSSIPD_SOCKET="$S" "$G" status
expect_out "status reads GOSSIPD_SOCKET" "$T/expect-status"

run "$G" --socket "$S" status --json
expect "status --json exits 0" 0 ""
expect_out "status --json prints the document as sent" "$T/doc.json"

# edges: every field.
A=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=
B=ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=
C=QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8=
D=YGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn8=
E=gIGCg4SFhoeIiYqLjI2Oj5CRkpOUlZaXmJmam5ydnp8=
cat >"$T/expect-edges" <<EOF
PEER                                          ENDPOINT        STATE       GEN   ROUND  STALE  ROUNDS/S  PAYLOAD_TX       WIRE_TX      WIRE_RX  TX_FRAMES  RX_FRAMES   RATIO  RTT_MS  DIFF_NORM
$A  127.0.0.1:7001  up            1      57      0      12.5         800          1000         1000         10         10  160.0x   0.210       0.05
$B  [::1]:7002      connecting    2       0      3         -           -           109            0          2          0       -       -          -
$C  -               handshake     7  123456      1         -           -  123456789012  98765432109    4000000    3999999   10.0x  12.000    1.5e-07
$D  127.0.0.1:7004  idle          0       0      0         -           0             0            0          0          0       -       -          -
$E  -               draining      1       2      0         -           4             5            6          1          1       -       -          -
EOF
run "$G" --socket "$S" edges
expect "edges exits 0" 0 ""
expect_out "edges prints every field of every edge" "$T/expect-edges"

# metrics: valid exposition text with the expected series.
run "$G" --socket "$S" metrics
expect "metrics exits 0" 0 ""
expect_out "metrics prints the same bytes as before the writer moved" "$PROM_EXPECTED/ok.prom"
if "$PY" "$CHECK_PROM" <"$T/out" >"$T/prom-errors"; then
	ok "metrics is valid Prometheus text"
else
	not_ok "metrics is valid Prometheus text"
	sed 's/^/#   /' "$T/prom-errors"
fi
for line in \
	'# TYPE gossipd_edge_tx_bytes_total counter' \
	"gossipd_edge_tx_bytes_total{peer=\"$A\"} 1000" \
	"gossipd_edge_rx_bytes_total{peer=\"$C\"} 98765432109" \
	"gossipd_edge_tx_frames_total{peer=\"$A\"} 10" \
	"gossipd_edge_rx_frames_total{peer=\"$A\"} 10" \
	"gossipd_edge_exact_bytes_total{peer=\"$A\"} 160000" \
	"gossipd_edge_message_bytes_total{peer=\"$A\"} 800" \
	"gossipd_edge_payload_tx_bytes_total{peer=\"$A\"} 800" \
	"gossipd_edge_wire_tx_bytes_total{peer=\"$A\"} 1000" \
	"gossipd_edge_wire_rx_bytes_total{peer=\"$C\"} 98765432109" \
	"gossipd_edge_tx_bytes_total{peer=\"$E\"} 5" \
	"gossipd_edge_message_bytes_total{peer=\"$E\"} 4" \
	"gossipd_edge_rounds_total{peer=\"$A\"} 55" \
	"gossipd_edge_resyncs_total{peer=\"$A\"} 2" \
	"gossipd_edge_rounds_total{peer=\"$D\"} 0" \
	'gossipd_model_consensus_estimate 0.0125' \
	'gossipd_hs_refused_total 2' \
	"gossipd_edge_compression_ratio{peer=\"$A\"} 160" \
	"gossipd_edge_compression_ratio{peer=\"$C\"} 10" \
	"gossipd_edge_rtt_seconds{peer=\"$A\"} 0.00021" \
	"gossipd_edge_rtt_seconds{peer=\"$C\"} 0.012" \
	"gossipd_edge_diff_norm{peer=\"$C\"} 1.5e-07" \
	"gossipd_edge_generation{peer=\"$C\"} 7" \
	"gossipd_edge_round{peer=\"$A\"} 57" \
	"gossipd_edge_staleness{peer=\"$B\"} 3" \
	"gossipd_edge_state{peer=\"$A\",state=\"up\"} 1" \
	"gossipd_edge_state{peer=\"$A\",state=\"down\"} 0" \
	"gossipd_edge_state{peer=\"$B\",state=\"connecting\"} 1" \
	"gossipd_edge_info{peer=\"$A\",endpoint=\"127.0.0.1:7001\"} 1" \
	"gossipd_edge_info{peer=\"$C\"} 1" \
	'gossipd_edges{state="up"} 1' \
	'gossipd_edges{state="down"} 0' \
	'gossipd_edges{state="idle"} 1' \
	'gossipd_edges{state="handshake"} 1' \
	'gossipd_edges{state="draining"} 1' \
	"gossipd_edge_state{peer=\"$D\",state=\"idle\"} 1" \
	"gossipd_edge_state{peer=\"$D\",state=\"up\"} 0" \
	"gossipd_edge_state{peer=\"$A\",state=\"idle\"} 0" \
	"gossipd_edge_state{peer=\"$E\",state=\"draining\"} 1" \
	"gossipd_edge_state{peer=\"$E\",state=\"idle\"} 0" \
	'# TYPE gossipd_rx_malformed_total counter' \
	'gossipd_rx_malformed_total 1' \
	'gossipd_api_malformed_total 5' \
	'gossipd_version_mismatch_total 6' \
	'gossipd_a_b_c_total 7' \
	'gossipd_info{version="0.1.0",public_key="hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo=",listen="127.0.0.1:7000",method="powergossip"} 1' \
	'gossipd_rank 4' \
	'gossipd_gamma 1' \
	'gossipd_model_registered 1' \
	'gossipd_model_floats 40064' \
	'gossipd_model_steps_total 123' \
	'gossipd_model_info{fingerprint="00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",summary="powergossip r4, 3 tensors, 40064 floats \"q\" \\ '; do
	if grep -q -F -e "$line" "$T/out"; then
		ok "metrics has: $line"
	else
		not_ok "metrics has: $line"
	fi
done
for absent in 'gossipd_a_b_c_total 8' 'note' \
	"gossipd_edge_state{peer=\"$A\",state=\"draining\"}" \
	"gossipd_edge_resyncs_total{peer=\"$B\"}" \
	"gossipd_edge_rtt_seconds{peer=\"$B\"}" \
	"gossipd_edge_compression_ratio{peer=\"$B\"}" \
	"gossipd_edge_compression_ratio{peer=\"$D\"}"; do
	if grep -q -F -e "$absent" "$T/out"; then
		not_ok "metrics leaves out: $absent"
	else
		ok "metrics leaves out: $absent"
	fi
done

# gossipd_edges: the daemon's five states in lifecycle order, then the
# state gossipctl does not know.
grep '^gossipd_edges{' "$T/out" >"$T/states"
printf 'gossipd_edges{state="%s"} %s\n' down 0 connecting 1 handshake 1 idle 1 \
	up 1 draining 1 >"$T/expect-states"
if cmp -s "$T/states" "$T/expect-states"; then
	ok "gossipd_edges: down, connecting, handshake, idle, up, then others"
else
	not_ok "gossipd_edges: down, connecting, handshake, idle, up, then others"
	diff -u "$T/expect-states" "$T/states" | sed 's/^/#   /'
fi

# An edge that STEPs go on without shows as a straggler.
S=$T/straggler.sock
run "$G" --socket "$S" status
expect "status with a straggler exits 0" 0 ""
expect_grep "status shows the straggler" "^$(printf %.8s "$A") +straggler "
expect_grep "status shows the edge that keeps pace as up" "^$(printf %.8s "$B") +up "
run "$G" --socket "$S" edges
expect_grep "edges shows the straggler" "^$A +- +straggler "
run "$G" --socket "$S" metrics
expect_out "metrics with a straggler: the same bytes as before" "$PROM_EXPECTED/straggler.prom"
expect_grep "metrics flags the straggler" "^gossipd_edge_straggler\\{peer=\"$A\"\\} 1$"
expect_grep "metrics flags the edge that keeps pace" "^gossipd_edge_straggler\\{peer=\"$B\"\\} 0$"

# A minimal document: no model, no edges.
S=$T/min.sock
run "$G" --socket "$S" status
expect "status of an idle daemon exits 0" 0 ""
expect_grep "status shows no model" '^model: +none registered$'
expect_grep "status shows no edges" '^edges: +none$'
run "$G" --socket "$S" edges
expect "edges without edges exits 0" 0 ""
expect_grep "edges without edges prints the header" '^PEER +ENDPOINT +STATE'
if [ "$(wc -l <"$T/out")" -eq 1 ]; then ok "edges without edges prints only the header"
else not_ok "edges without edges prints only the header"; fi
run "$G" --socket "$S" metrics
expect_out "metrics of an idle daemon: the same bytes as before" "$PROM_EXPECTED/min.prom"
if [ "$rc" = 0 ] && "$PY" "$CHECK_PROM" <"$T/out" >"$T/prom-errors"; then
	ok "metrics of an idle daemon is valid"
else
	not_ok "metrics of an idle daemon is valid"
fi
expect_grep "metrics of an idle daemon counts no edges" '^gossipd_edges\{state="up"\} 0$'
grep '^gossipd_edges{' "$T/out" >"$T/states"
printf 'gossipd_edges{state="%s"} 0\n' down connecting handshake idle up >"$T/expect-states"
if cmp -s "$T/states" "$T/expect-states"; then
	ok "metrics without edges has each of the five known states, 0"
else
	not_ok "metrics without edges has each of the five known states, 0"
	diff -u "$T/expect-states" "$T/states" | sed 's/^/#   /'
fi

# Failures from the daemon: exit 1 with a message.
for case in \
	"refuse|gossipctl: $T/refuse.sock: gossipd refused STATUS: not today (Operation not permitted)" \
	"major|gossipctl: $T/major.sock: gossipd speaks local API version 2.0, gossipctl $PROTO_VERSION" \
	"badjson|gossipctl: $T/badjson.sock: malformed status document from gossipd: line 1, column 11: " \
	"badtype|gossipctl: $T/badtype.sock: malformed status document from gossipd: edges[0].round is not an integer >= 0" \
	"badroot|gossipctl: $T/badroot.sock: malformed status document from gossipd: the document is not a JSON object" \
	"zero|gossipctl: $T/zero.sock: malformed reply from gossipd: empty frame" \
	"huge|gossipctl: $T/huge.sock: malformed reply from gossipd: a 1048577-byte frame (the limit is 1048576)" \
	"hangup|gossipctl: $T/hangup.sock: gossipd closed the connection" \
	"reply|gossipctl: $T/reply.sock: unexpected reply 0xc1 from gossipd to STATUS"; do
	name=${case%%|*}
	msg=${case#*|}
	for sub in status edges metrics "status --json"; do
		run "$G" --socket "$T/$name.sock" $sub
		# jansson words its own errors: compare up to their start.
		case $(cat "$T/err") in
		"$msg"*) expect "$sub: $name reply exits 1" 1 ;;
		*) not_ok "$sub: $name reply: stderr does not start with '$msg'" ;;
		esac
		if [ -s "$T/out" ]; then
			not_ok "$sub: $name reply prints nothing on stdout"
		fi
	done
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
