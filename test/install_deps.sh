#!/bin/bash
# test/install_deps.sh -- install what building and testing colojoin needs on
# Debian 12, when it is missing (or always, with --always).
#
#   test/install_deps.sh            check; install with apt-get if something lacks
#   test/install_deps.sh --always   apt-get update && apt-get install, always
#
# Needs root to install.  test/run_tests.sh and test/demo.sh call it first,
# .ci/run calls it with --always.
set -euo pipefail

# postgresql-15: the servers and postgres_fdw; postgresql-server-dev-15: PGXS
# (with clang and llvm for the JIT bitcode), pg_regress and
# PostgreSQL::Test::Cluster; libipc-run-perl: what the TAP tests run with;
# python3: the fuzz test (test/fuzz/fuzz.py, standard library only).
PACKAGES=(build-essential perl postgresql-15 postgresql-client-15
	postgresql-server-dev-15 libipc-run-perl python3)

missing() {
	local pgbin=/usr/lib/postgresql/15/bin
	[ -x $pgbin/pg_config ] || return 0
	[ -x $pgbin/postgres ] || return 0
	[ -f /usr/lib/postgresql/15/lib/postgres_fdw.so ] || return 0
	[ -f /usr/lib/postgresql/15/lib/pgxs/src/makefiles/pgxs.mk ] || return 0
	[ -f /usr/lib/postgresql/15/lib/pgxs/src/test/perl/PostgreSQL/Test/Cluster.pm ] || return 0
	command -v make >/dev/null || return 0
	command -v gcc >/dev/null || return 0
	command -v prove >/dev/null || return 0
	command -v python3 >/dev/null || return 0
	perl -MIPC::Run -e1 2>/dev/null || return 0
	id postgres >/dev/null 2>&1 || return 0
	return 1
}

if [ "${1:-}" != --always ] && ! missing; then
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	echo "install_deps.sh: missing build or test dependencies; as root on Debian 12 run:" >&2
	echo "  apt-get update && apt-get install -y ${PACKAGES[*]}" >&2
	exit 1
fi
echo "install_deps.sh: apt-get install ${PACKAGES[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q "${PACKAGES[@]}"
