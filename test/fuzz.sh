#!/bin/bash
# test/fuzz.sh SEED COUNT [OPTION...] -- run COUNT queries of colojoin's
# randomized differential test (test/fuzz/fuzz.py) from seed SEED against the
# test cluster (test/cluster/cluster.sh, the same CJ_PORT / CJ_CLUSTER_DIR
# settings), comparing every result over sharded tables with the same query
# over plain local twins.  Failures are printed with the seed, the
# declarations and the reduced query; the last line is
# "fuzz: N queries, M failures", and the exit status is non-zero on any
# failure.  Options go to fuzz.py (--help lists them; --no-FEATURE leaves a
# feature out, as does FUZZ_EXCLUDE=feature,feature).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -lt 2 ] || ! [[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ ]]; then
	echo "usage: $0 SEED COUNT [fuzz.py option...]" >&2
	exit 2
fi
seed=$1 count=$2
shift 2
env_lines=$("$ROOT/test/cluster/cluster.sh" env) || exit 1
eval "$env_lines"
"$ROOT/test/cluster/cluster.sh" status >/dev/null ||
	{ echo "fuzz.sh: the cluster is not running (test/cluster/cluster.sh start)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "fuzz.sh: python3 is missing (apt-get install python3)" >&2; exit 1; }
exec python3 "$ROOT/test/fuzz/fuzz.py" --seed "$seed" --count "$count" "$@"
