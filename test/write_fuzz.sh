#!/bin/bash
# test/write_fuzz.sh SEED COUNT [OPTION...] -- run COUNT write sequences of
# colojoin's randomized write test (test/fuzz/write_fuzz.py) from seed SEED
# against the test cluster (test/cluster/cluster.sh, the same CJ_PORT /
# CJ_CLUSTER_DIR settings): transactions of INSERT, UPDATE, DELETE, COPY,
# reads and savepoints over sharded tables, each run again over plain local
# twins, comparing every statement's result, then every table, and every
# placement read on its node.  Failures are printed with the seed, the
# declarations and the reduced sequence; the last line is
# "write_fuzz: N sequences, M failures", and the exit status is non-zero on
# any failure.  Options go to write_fuzz.py (--help lists them; --no-FEATURE
# leaves a feature out, as does WRITE_FUZZ_EXCLUDE=feature,feature).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -lt 2 ] || ! [[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ ]]; then
	echo "usage: $0 SEED COUNT [write_fuzz.py option...]" >&2
	exit 2
fi
seed=$1 count=$2
shift 2
env_lines=$("$ROOT/test/cluster/cluster.sh" env) || exit 1
eval "$env_lines"
"$ROOT/test/cluster/cluster.sh" status >/dev/null ||
	{ echo "write_fuzz.sh: the cluster is not running (test/cluster/cluster.sh start)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "write_fuzz.sh: python3 is missing (apt-get install python3)" >&2; exit 1; }
exec python3 "$ROOT/test/fuzz/write_fuzz.py" --seed "$seed" --count "$count" "$@"
