#!/bin/sh
# The installed tree: `meson install --destdir` of the current build into a
# temporary directory, then checks of what an operator and a C programmer
# get there:
#   - every file in its place (binaries, library, headers, pkg-config file,
#     man pages, unit, sysusers.d snippet, example configuration, the
#     Kubernetes and cloud-init examples);
#   - the installed headers compile on their own, and a tiny program built
#     with `pkg-config --cflags --libs libgossip` against the DESTDIR links
#     the installed library and runs (-ENOENT from a missing socket);
#   - the installed gossipd reads the example configuration;
#   - the unit reads its configuration from ConfigurationDirectory=
#     (/etc/gossipd/gossipd.conf whatever the prefix);
#   - systemd-analyze verify passes on the installed unit (ExecStart
#     pointed into the DESTDIR) with no message at all, and
#     `systemd-analyze security --offline` rates it <= 2.0; the same for
#     the textfile collector's gossipd-metrics.service and .timer, whose
#     gossipctl is the installed one (test_service.py runs its command);
#   - systemd-sysusers accepts the snippet;
#   - mandoc -T lint (warnings and worse) and man -l on every man page.
# A missing tool is a failure, not a skip: tools/run-tests installs them.
#
# Usage: test_install.sh MESON BUILD_DIR SOURCE_DIR, with PREFIX, BINDIR,
# SBINDIR, LIBDIR, INCLUDEDIR, MANDIR and DATADIR (meson's options) in the
# environment.  Prints "ok"/"not ok" lines and "N passed, N failed".
set -u
MESON=$1
BUILD=$2
SRC=$3
LC_ALL=C
export LC_ALL

T=$(mktemp -d "${TMPDIR:-/tmp}/gossipd-install.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM
D=$T/destdir

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() {
	failed=$((failed + 1))
	echo "not ok - $1"
	[ -s "$T/out" ] && sed 's/^/#   /' "$T/out" | head -40
	return 0
}
# check NAME CMD...: ok when CMD exits 0; its output goes to $T/out.
check() {
	name=$1
	shift
	if "$@" >"$T/out" 2>&1; then ok "$name"; else not_ok "$name"; fi
}
# abs DIR: meson's option made absolute under the prefix.
abs() { case $1 in /*) echo "$1" ;; *) echo "$PREFIX/$1" ;; esac; }
need() {
	for tool in "$@"; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			not_ok "$tool is installed (tools/run-tests installs it)"
			return 1
		fi
	done
}

SBIN=$D$(abs "$SBINDIR")
BIN=$D$(abs "$BINDIR")
LIB=$D$(abs "$LIBDIR")
INC=$D$(abs "$INCLUDEDIR")
MAN=$D$(abs "$MANDIR")
UNITDIR=$PREFIX/lib/systemd/system
UNIT=$D$UNITDIR/gossipd.service
METRICS_UNIT=$D$UNITDIR/gossipd-metrics.service
METRICS_TIMER=$D$UNITDIR/gossipd-metrics.timer
SYSUSERS=$D$PREFIX/lib/sysusers.d/gossipd.conf
EXAMPLE=$D$(abs "$DATADIR")/doc/gossipd/examples/gossipd.conf

if ! "$MESON" install -C "$BUILD" --destdir "$D" --no-rebuild --quiet >"$T/out" 2>&1; then
	not_ok "meson install --destdir"
	echo "$passed passed, $((failed)) failed"
	exit 1
fi
ok "meson install --destdir"

# ---- the tree -----------------------------------------------------------
for f in "$SBIN/gossipd" "$BIN/gossipctl" "$BIN/gossip-sim" "$BIN/gossip-bench" \
	"$BIN/gossip-train" "$BIN/gossip-run"; do
	if [ -f "$f" ] && [ -x "$f" ]; then ok "installed: ${f#"$D"}"
	else not_ok "installed: ${f#"$D"}"; fi
done
for f in "$LIB/libgossip.so" "$LIB/libgossip.so.0" "$LIB/pkgconfig/libgossip.pc" \
	"$INC/gossip/client.h" "$INC/gossip/gossip.h" \
	"$INC/gossip/sim.h" "$MAN/man8/gossipd.8" "$MAN/man8/gossipctl.8" \
	"$MAN/man5/gossipd.conf.5" "$MAN/man1/gossip-train.1" "$MAN/man1/gossip-run.1" \
	"$UNIT" "$SYSUSERS" "$EXAMPLE" "$METRICS_UNIT" "$METRICS_TIMER" \
	"${EXAMPLE%/*}/kubernetes/kustomization.yaml" "${EXAMPLE%/*}/cloud-init/gossipd.yaml"; do
	if [ -f "$f" ]; then ok "installed: ${f#"$D"}"
	else not_ok "installed: ${f#"$D"}"; fi
done
# Only the headers of what libgossip.so exports: proto/ is internal.
if [ -e "$INC/gossip/proto.h" ]; then not_ok "proto.h is not installed"
else ok "proto.h is not installed"; fi
# Nothing is installed outside the prefix.
find "$D" \( -type f -o -type l \) ! -path "$D$PREFIX/*" >"$T/out"
if [ -s "$T/out" ]; then not_ok "everything is under $PREFIX"; else ok "everything is under $PREFIX"; fi
# The Python client (bindings/python/), in the interpreter's dist-packages
# under the prefix; meson leaves it out when it finds no Python.
if [ -f "$SRC/bindings/python/meson.build" ]; then
	for f in __init__.py client.py _proto_version.py; do
		find "$D$PREFIX" -path "*/python3*/*-packages/gossipd/$f" >"$T/out"
		if [ -s "$T/out" ]; then ok "installed: the Python client's gossipd/$f"
		else not_ok "installed: the Python client's gossipd/$f"; fi
	done
	# Its protocol version is proto.h's, from the generated module (no
	# proto.h is installed for it to read).
	want=$(sed -n 's/^#define GSP_PROTO_VERSION_\(MAJOR\|MINOR\) \([0-9]*\)$/\2/p' \
		"$SRC/proto/proto.h" | paste -sd.)
	pkgdir=$(find "$D$PREFIX" -path "*/python3*/*-packages/gossipd/protocol.py" | head -n 1)
	if [ -n "$pkgdir" ] && (cd "$T" && PYTHONPATH=$(dirname "$(dirname "$pkgdir")") python3 -c '
import sys
from gossipd import protocol as P
assert "gossipd._proto_version" in sys.modules
print("%d.%d" % (P.VERSION_MAJOR, P.VERSION_MINOR))') >"$T/out" 2>&1 &&
		[ "$(cat "$T/out")" = "$want" ]; then
		ok "the installed Python client speaks proto.h's protocol $want"
	else
		not_ok "the installed Python client speaks proto.h's protocol $want"
	fi
	# It looks for libgossip in the prefix's libdir, and loads it.
	f=$(find "$D$PREFIX" -path "*/python3*/*-packages/gossipd/_installed.py" | head -n 1)
	if [ -n "$f" ] && grep -qxF "LIBDIR = \"$(abs "$LIBDIR")\"" "$f"; then
		ok "the installed Python client knows the prefix's libdir"
	else
		not_ok "the installed Python client knows the prefix's libdir"
	fi
	if [ -n "$f" ] && GOSSIPD_LIBGOSSIP="$D$(abs "$LIBDIR")/libgossip.so.0" \
		PYTHONPATH="$(dirname "$(dirname "$f")")" python3 -c '
import sys, gossipd
try:
    gossipd.Client("/nonexistent/gossipd.sock")
except gossipd.DaemonNotRunning:
    sys.exit(0)
sys.exit(1)' >"$T/out" 2>&1; then
		ok "the installed Python client runs on the installed libgossip"
	else
		not_ok "the installed Python client runs on the installed libgossip"
		cat "$T/out" >&2
	fi
fi

# ---- the installed programs ---------------------------------------------
check "installed gossipd --version" "$SBIN/gossipd" --version
check "installed gossipctl --version" "$BIN/gossipctl" --version
check "installed gossip-run --help" "$BIN/gossip-run" --help
# gossip-run finds the installed gossipd and gossipcluster.py: its paths
# are this prefix's, filled in by meson.
if grep -qxF "SBINDIR = \"$(abs "$SBINDIR")\"" "$BIN/gossip-run" &&
	grep -qxF "PKGDATADIR = \"$(abs "$DATADIR")/gossipd\"" "$BIN/gossip-run" &&
	[ -f "$D$(abs "$DATADIR")/gossipd/gossipcluster.py" ]; then
	ok "installed gossip-run knows the prefix's gossipd and gossipcluster.py"
else
	not_ok "installed gossip-run knows the prefix's gossipd and gossipcluster.py"
fi
sed "s|^PrivateKeyFile = .*|PrivateKeyFile = $T/private.key|" "$EXAMPLE" >"$T/example.conf"
if "$SBIN/gossipd" --config "$T/example.conf" --check-config >"$T/out" 2>&1 &&
	grep -qE '^[A-Za-z0-9+/]{43}=$' "$T/out"; then
	ok "the example configuration passes --check-config"
else
	not_ok "the example configuration passes --check-config"
fi

# ---- C programs against the installed library ---------------------------
if need cc pkg-config; then
	for h in gossip.h client.h sim.h; do
		printf '#include <gossip/%s>\nint main(void) { return 0; }\n' "$h" >"$T/h.c"
		check "installed <gossip/$h> compiles on its own" \
			cc -std=c11 -Wall -Wextra -Werror -I"$INC" -c "$T/h.c" -o "$T/h.o"
	done
	cat >"$T/prog.c" <<'CEOF'
/* A program outside the tree: connects to a socket that does not exist. */
#include <errno.h>
#include <stdio.h>
#include <gossip/client.h>

int main(int argc, char **argv)
{
	gsp_client *c = NULL;
	int r = gsp_client_connect(argv[1], "install-test", &c);
	printf("%d %s\n", r, gsp_strerror(r));
	return r == -ENOENT && c == NULL ? 0 : 1;
}
CEOF
	export PKG_CONFIG_SYSROOT_DIR="$D" PKG_CONFIG_PATH="$LIB/pkgconfig"
	unset PKG_CONFIG_LIBDIR
	flags=$(pkg-config --cflags --libs libgossip 2>"$T/out")
	case $flags in
	*"-I$D"*"-L$D"*|*"-L$D"*"-I$D"*) ok "pkg-config libgossip points into the DESTDIR: $flags" ;;
	*) not_ok "pkg-config libgossip points into the DESTDIR: '$flags'" ;;
	esac
	# shellcheck disable=SC2086
	check "a program builds with pkg-config --cflags --libs libgossip" \
		cc -std=c11 -Wall -Werror "$T/prog.c" -o "$T/prog" $flags
	if LD_LIBRARY_PATH=$LIB "$T/prog" "$T/no-such.sock" >"$T/out" 2>&1 &&
		grep -q '^-2 No such file or directory' "$T/out"; then
		ok "it runs against the installed libgossip and gets -ENOENT"
	else
		not_ok "it runs against the installed libgossip and gets -ENOENT"
	fi
	if LD_LIBRARY_PATH=$LIB ldd "$T/prog" >"$T/out" 2>&1 &&
		grep -q "libgossip.so.0 => $LIB/libgossip.so.0" "$T/out"; then
		ok "it links the DESTDIR's libgossip.so.0"
	else
		not_ok "it links the DESTDIR's libgossip.so.0"
	fi
fi

# ---- the unit and the sysusers.d snippet --------------------------------
if grep -qx "ExecStart=$(abs "$SBINDIR")/gossipd --config .*" "$UNIT"; then
	ok "the unit starts $(abs "$SBINDIR")/gossipd"
else
	not_ok "the unit starts $(abs "$SBINDIR")/gossipd"
fi
# The configuration is read from ConfigurationDirectory= (/etc/gossipd for
# any prefix), where gossipd(8) and docs/OPERATIONS.md tell to put it.
grep -E '^(ExecStart|ConfigurationDirectory)=' "$UNIT" >"$T/out"
if grep -qx 'ExecStart=.* --config \${CONFIGURATION_DIRECTORY}/gossipd\.conf' "$T/out" &&
	grep -qx 'ConfigurationDirectory=gossipd' "$T/out"; then
	ok "the unit reads \${CONFIGURATION_DIRECTORY}/gossipd.conf, ConfigurationDirectory=gossipd"
else
	not_ok "the unit reads \${CONFIGURATION_DIRECTORY}/gossipd.conf, ConfigurationDirectory=gossipd"
fi
if need systemd-analyze; then
	# verify wants ExecStart on this system: the same unit, pointed into D.
	# NAME's exposure (systemd-analyze security, offline): at most 2.0.
	check_exposure() {
		systemd-analyze security --offline=true --root="$D" "$UNITDIR/$1" \
			>"$T/security" 2>&1
		score=$(sed -n "s/.*Overall exposure level for $1: \([0-9.]*\) .*/\1/p" "$T/security")
		cp "$T/security" "$T/out"
		if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
			ok "systemd-analyze security --offline $1: exposure $score <= 2.0"
		else
			not_ok "systemd-analyze security --offline $1: exposure '$score' <= 2.0"
		fi
	}
	# UNIT_FILE [INSTANCE]: gossipd.service, or the template as an instance.
	check_unit() {
		local file=$1 name=${2:-$1}
		mkdir -p "$T/units"
		sed "s|^ExecStart=$PREFIX/|ExecStart=$D$PREFIX/|" "$D$UNITDIR/$file" >"$T/units/$file"
		if (cd "$T/units" && systemd-analyze verify --man=no "$name") >"$T/out" 2>&1 &&
			[ ! -s "$T/out" ]; then
			ok "systemd-analyze verify $name: no message"
		else
			not_ok "systemd-analyze verify $name: no message"
		fi
		check_exposure "$name"
	}
	check_unit gossipd.service
	# The template (gossipd@NAME: several daemons on one host) is the same
	# unit but for the instance's own configuration, state and socket.
	TEMPLATE=$D$UNITDIR/gossipd@.service
	check_unit gossipd@.service gossipd@job1.service
	sed -e 's|%i.conf|gossipd.conf|; s|gossipd/%i$|gossipd|; s| (%i)$||' \
		-e 's|NAME.conf|gossipd.conf|; s|gossipd/NAME|gossipd|' \
		-e 's|gossipd@.service: one gossipd per instance NAME (gossipd@NAME)|gossipd.service: one gossipd per training host|' \
		"$TEMPLATE" >"$T/untemplated"
	if diff "$UNIT" "$T/untemplated" >"$T/out" 2>&1 &&
		grep -qx 'StateDirectory=gossipd/%i' "$TEMPLATE" &&
		grep -qx 'RuntimeDirectory=gossipd/%i' "$TEMPLATE" &&
		grep -q '^ExecStart=.*--config ${CONFIGURATION_DIRECTORY}/%i.conf$' "$TEMPLATE"; then
		ok "gossipd@.service: gossipd.service's hardening, with the instance's config, state and socket"
	else
		not_ok "gossipd@.service: gossipd.service's hardening, with the instance's config, state and socket"
	fi
	# The textfile collector's units: verified together (the timer's
	# service beside it), rated like gossipd's.
	cp "$METRICS_UNIT" "$METRICS_TIMER" "$T/units/"
	if systemd-analyze verify --man=no "$T/units/gossipd-metrics.service" \
		"$T/units/gossipd-metrics.timer" >"$T/out" 2>&1 && [ ! -s "$T/out" ]; then
		ok "systemd-analyze verify gossipd-metrics.service and .timer: no message"
	else
		not_ok "systemd-analyze verify gossipd-metrics.service and .timer: no message"
	fi
	if grep -q "^ExecStart=/bin/sh -c '$(abs "$BINDIR")/gossipctl metrics " "$METRICS_UNIT"; then
		ok "gossipd-metrics.service runs the installed gossipctl"
	else
		not_ok "gossipd-metrics.service runs the installed gossipctl"
	fi
	check_exposure gossipd-metrics.service
fi
if need systemd-sysusers; then
	mkdir -p "$T/root"
	if systemd-sysusers --dry-run --root="$T/root" "$SYSUSERS" >"$T/out" 2>&1 &&
		grep -q "Creating user 'gossipd'" "$T/out"; then
		ok "systemd-sysusers creates the gossipd user"
	else
		not_ok "systemd-sysusers creates the gossipd user"
	fi
fi

# ---- man pages ----------------------------------------------------------
if need mandoc man; then
	for page in "$MAN/man8/gossipd.8" "$MAN/man8/gossipctl.8" "$MAN/man5/gossipd.conf.5" \
		"$MAN/man1/gossip-train.1" "$MAN/man1/gossip-run.1"; do
		check "mandoc -T lint -W warning ${page##*/}" mandoc -T lint -W warning "$page"
		name=$(basename "$page" | sed 's/\.[0-9]$//')
		if MANPAGER=cat MANWIDTH=80 man -l "$page" >"$T/out" 2>&1 &&
			grep -q "^     $name " "$T/out"; then
			ok "man -l ${page##*/}"
		else
			not_ok "man -l ${page##*/}"
		fi
	done
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
