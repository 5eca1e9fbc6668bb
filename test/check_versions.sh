#!/bin/bash
# test/check_versions.sh -- the extension's version is the same everywhere:
# META.json (version, provides.colojoin.version and file) agrees with
# colojoin.control's default_version, the scripts install it (a base script
# and an upgrade chain to it, all in the Makefile's DATA), and README.md
# names it.  Exits 1, naming what disagrees.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
exec python3 - <<'PY'
import json, re, os, sys

bad = []
control = open('colojoin.control').read()
default = re.search(r"default_version\s*=\s*'([^']+)'", control).group(1)
meta = json.load(open('META.json'))
prov = meta['provides']['colojoin']
for where, v in (('version', meta['version']), ('provides.colojoin.version', prov['version'])):
    if not (v == default or v.startswith(default + '.')):
        bad.append(f"META.json {where} is {v}, colojoin.control installs {default}")
data = re.search(r'^DATA\s*=\s*(.*)$', open('Makefile').read(), re.M).group(1).split()
if prov['file'] not in data or not os.path.exists(prov['file']):
    bad.append(f"META.json provides.colojoin.file {prov['file']} is not a script the Makefile installs")
# a base script and upgrades from it to the default version
base = [f for f in data if re.fullmatch(r'colojoin--[\d.]+\.sql', f)]
steps = {m.group(1): m.group(2) for f in data
         for m in [re.fullmatch(r'colojoin--([\d.]+)--([\d.]+)\.sql', f)] if m}
reached = set()
for b in base:
    v = re.fullmatch(r'colojoin--([\d.]+)\.sql', b).group(1)
    seen = {v}
    while v in steps:
        v = steps[v]
        seen.add(v)
    reached |= seen
if default not in reached:
    bad.append(f"no script chain in the Makefile's DATA installs {default}")
for f in data:
    if not os.path.exists(f):
        bad.append(f"Makefile DATA names {f}, which does not exist")
readme = open('README.md').read()
m = re.search(r'current version of the SQL objects is (\d+(?:\.\d+)*)', readme)
if not m or m.group(1) != default:
    bad.append(f"README.md names version {m.group(1) if m else 'none'}, colojoin.control installs {default}")
for b in bad:
    print('check_versions: ' + b, file=sys.stderr)
if not bad:
    print(f'check_versions: version {default} agrees in colojoin.control, META.json, the scripts and README.md')
sys.exit(1 if bad else 0)
PY
