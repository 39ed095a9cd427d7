#!/usr/bin/env bash
# tools/deps.sh's package sets, through gsp_install_deps with stub dpkg-query
# (nothing installed), id (root) and apt-get (logs its arguments):
#   - tools/quickstart's call installs what the build and the main job need
#     and none of the test-only packages;
#   - tools/run-tests' call adds every package a test needs.
#
# Usage: test_deps.sh SOURCE_DIR.  Prints "ok"/"not ok" lines and
# "N passed, N failed".
set -u
SRC=$1
T=$(mktemp -d "${TMPDIR:-/tmp}/gossipd-deps.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $1"; }

mkdir "$T/bin"
printf '#!/bin/sh\nexit 1\n' >"$T/bin/dpkg-query"
printf '#!/bin/sh\necho 0\n' >"$T/bin/id"
printf '#!/bin/sh\n[ "$1" = update ] || echo "$@" >>"%s"\n' "$T/apt.log" >"$T/bin/apt-get"
chmod +x "$T/bin/"*

# installs CALL: the packages gsp_install_deps asks apt-get for, one a line.
installs() {
	: >"$T/apt.log"
	PATH="$T/bin:$PATH" bash -c ". '$SRC/tools/deps.sh'; $1" >/dev/null 2>&1
	tr ' ' '\n' <"$T/apt.log" | grep -v '^-' | grep -vx install
}

# What the main job needs, and what only tests need (and who needs it).
main_job="meson ninja-build pkg-config gcc libuv1-dev libsodium-dev libopenblas-dev
	zlib1g-dev libinih-dev libsystemd-dev libjansson-dev dataset-fashion-mnist python3"
test_only="check python3-numpy python3-torch clang libclang-rt-14-dev systemd mandoc
	man-db strace python3-prometheus-client valgrind iproute2 yamllint python3-yaml
	python3-kubernetes"

installs 'gsp_install_deps' >"$T/quickstart"
for p in $main_job; do
	if grep -qx "$p" "$T/quickstart"; then ok "quickstart installs $p"
	else not_ok "quickstart installs $p"; fi
done
for p in $test_only; do
	if grep -qx "$p" "$T/quickstart"; then not_ok "quickstart leaves $p to run-tests"
	else ok "quickstart leaves $p to run-tests"; fi
done

installs 'gsp_install_deps "${GSP_TEST_PACKAGES[@]}"' >"$T/run-tests"
for p in $main_job $test_only; do
	if grep -qx "$p" "$T/run-tests"; then ok "run-tests installs $p"
	else not_ok "run-tests installs $p"; fi
done

# The scripts make those calls.
if grep -qx 'gsp_install_deps' "$SRC/tools/quickstart"; then ok "tools/quickstart calls gsp_install_deps alone"
else not_ok "tools/quickstart calls gsp_install_deps alone"; fi
if grep -q '^if ! gsp_install_deps "${GSP_TEST_PACKAGES\[@\]}"; then$' "$SRC/tools/run-tests"; then
	ok "tools/run-tests calls gsp_install_deps with GSP_TEST_PACKAGES"
else
	not_ok "tools/run-tests calls gsp_install_deps with GSP_TEST_PACKAGES"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
