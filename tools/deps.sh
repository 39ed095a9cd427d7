# shellcheck shell=bash
# Shared by tools/quickstart and tools/run-tests (sourced, not run): installs
# the Debian packages the build needs and configures and builds a meson
# build directory.  Functions print what they do and return non-zero on
# failure; callers run with set -euo pipefail.

# What building and running the main job (tools/quickstart) needs on a
# fresh Debian 12: the toolchain, the libraries of the engine, gossipd and
# gossipctl, python3 for tools/gossip-cluster and the Fashion-MNIST data
# set gossip-train learns.
GSP_BASE_PACKAGES=(
	meson ninja-build pkg-config gcc
	libuv1-dev libsodium-dev libopenblas-dev zlib1g-dev libinih-dev
	libsystemd-dev libjansson-dev
	dataset-fashion-mnist python3
)

# What tools/run-tests adds: every tool a test needs, and gnuplot for
# tools/bench/consensus-experiment's plots.
GSP_TEST_PACKAGES=(
	check                             # the C unit tests (tests/*/)
	python3-numpy python3-torch       # suite python: the NumPy and PyTorch client
	clang libclang-rt-14-dev          # build-fuzz/: libFuzzer harnesses
	iproute2                          # suite bench-smoke: ip netns, tc tbf
	dnsmasq-base                      # integration test seeds: DNS in a namespace (no service)
	valgrind                          # memcheck over the Check unit tests
	# tests/install/ (suite deploy): unit, man page, filter and metrics checks
	systemd mandoc man-db strace python3-prometheus-client
	# ... and deploy/'s manifests (test_manifests.py)
	yamllint python3-yaml python3-kubernetes
	prometheus                        # suite integration: test_metrics.py scrapes gossipd
	gnuplot-nox
)

gsp_log() {
	if [ -t 2 ]; then
		printf '\033[1m==> %s\033[0m\n' "$*" >&2
	else
		printf '==> %s\n' "$*" >&2
	fi
}

# gsp_install_deps [extra packages...]: installs the base packages and the
# extra ones (tools/run-tests passes GSP_TEST_PACKAGES), calling apt-get
# only for those not installed yet (and apt-get update once, first).
# Without root it prints the command to run.
gsp_install_deps() {
	local missing=() p status
	for p in "${GSP_BASE_PACKAGES[@]}" "$@"; do
		status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
		[ "$status" = "install ok installed" ] || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		return 0
	fi
	local cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "missing packages: ${missing[*]}" >&2
		echo "run as root:  $cmd" >&2
		return 1
	fi
	if ! command -v apt-get >/dev/null; then
		echo "missing packages: ${missing[*]}; no apt-get on this system (Debian 12 expected)" >&2
		return 1
	fi
	gsp_log "installing ${missing[*]}"
	apt-get update -q </dev/null || return 1
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${missing[@]}" </dev/null
}

# gsp_build DIR [meson options...]: configures DIR (a fresh setup, or a
# reconfigure that also picks up newly installed dependencies) and builds it.
# The compiler is fixed when DIR is first set up (CC=... in the environment).
# meson's output is shown only on failure, or always with GSP_VERBOSE=1.
gsp_build() {
	local dir=$1 log rc=0
	shift
	log=$(mktemp)
	if [ -f "$dir/meson-private/coredata.dat" ]; then
		gsp_log "reconfiguring $dir $*"
		meson setup --reconfigure "$dir" "$@" >"$log" 2>&1 || rc=$?
	else
		gsp_log "configuring $dir $*"
		meson setup "$dir" "$@" >"$log" 2>&1 || rc=$?
	fi
	if [ $rc -ne 0 ] || [ "${GSP_VERBOSE:-0}" = 1 ]; then
		cat "$log" >&2
	fi
	if [ $rc -ne 0 ]; then
		rm -f "$log"
		return $rc
	fi
	rm -f "$log"
	gsp_log "building $dir"
	ninja -C "$dir"
}
