#!/bin/bash
# test/check_layers.sh -- the include graph of src/'s folders, and a check
# that no file includes one of a layer above its own.
#
#   test/check_layers.sh          print the graph (folder -> folders it
#                                 includes, with counts); exit 1 on an
#                                 upward include, a folder not in the list
#                                 below, or a file below the top that
#                                 includes the entry module
#
# The layers, bottom first (DESIGN.md "Layout" says what each owns).  A file
# may include headers of its own folder and of folders earlier in the list,
# but never another folder's private *_internal.h;
# src/colojoin.c, the entry module, is on top and has no header.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../src" || exit 2

LAYERS=(util deparse metadata remote operations plan exec write)

declare -A RANK=()
for i in "${!LAYERS[@]}"; do
	RANK[${LAYERS[$i]}]=$i
done

bad=0
declare -A edges=()
for dir in */; do
	dir=${dir%/}
	if [ -z "${RANK[$dir]:-}" ]; then
		echo "check_layers: folder src/$dir is not a known layer (add it to LAYERS in test/check_layers.sh and to DESIGN.md)" >&2
		bad=1
	fi
done
for f in */*.c */*.h; do
	dir=${f%%/*}
	from=${RANK[$dir]:--1}
	while IFS= read -r inc; do
		target=${inc%%/*}
		# PostgreSQL's own headers (and libpq's) are not in src/
		if [ "$inc" != "$target" ] && [ ! -e "$inc" ]; then
			continue
		fi
		if [ "$inc" = "$target" ]; then
			# a header without a folder: only PostgreSQL's own, or the entry
			if [ "$inc" = colojoin.h ]; then
				echo "check_layers: src/$f includes the entry module" >&2
				bad=1
			elif [ -e "$inc" ]; then
				echo "check_layers: src/$f includes src/$inc without its folder" >&2
				bad=1
			fi
			continue
		fi
		to=${RANK[$target]:--1}
		[ "$target" != "$dir" ] && edges["$dir -> $target"]=$((${edges["$dir -> $target"]:-0} + 1))
		if [ "$target" != "$dir" ] && [[ "$inc" == *_internal.h ]]; then
			echo "check_layers: src/$f includes $inc, which is private to src/$target" >&2
			bad=1
		fi
		if [ "$to" -lt 0 ]; then
			echo "check_layers: src/$f includes $inc, outside every layer" >&2
			bad=1
		elif [ "$to" -gt "$from" ]; then
			echo "check_layers: src/$f ($dir) includes $inc ($target), a layer above it" >&2
			bad=1
		fi
	done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done

echo "layers, bottom first: ${LAYERS[*]}; entry module: src/colojoin.c"
for e in "${!edges[@]}"; do
	echo "  $e (${edges[$e]})"
done | sort
if [ "$bad" = 0 ]; then
	echo "check_layers: no include goes up a layer"
fi
exit $bad
