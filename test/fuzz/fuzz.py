#!/usr/bin/env python3
"""
test/fuzz/fuzz.py -- seeded randomized differential test of colojoin.

From a seed, declares sharded tables at random (partitioned tables of schema
fz_s whose leaves, in schema fz_p, are postgres_fdw foreign tables on the
three nodes of the test cluster, schema fz_r there) and a plain local twin of
each (schema fz_l) holding exactly the same rows, then generates queries over
them and runs each query text twice, with search_path fz_s and with fz_l,
comparing the results as multisets.  A mismatch, or an error on the sharded
side only, is a failure: it is printed with the seed, the declarations it
needs and the query, reduced as far as the failure persists.

Queries are checked in bulk: one psql process per world runs a script in
which function fz_m.chk(query, args, mode, settings) runs and compares both
sides; only failures are re-run one by one, to reduce them.

Usage (the cluster's ports come from the environment, as the suites read
them: PGHOST/PGPORT/PGUSER/PGDATABASE and CJ_NODE1_PORT..CJ_NODE3_PORT):

    fuzz.py --seed SEED --count COUNT [--no-FEATURE ...] [--keep] [-v]

Every feature of FEATURES below can be left out with --no-FEATURE, or with
FUZZ_EXCLUDE=feature,feature (--help lists them).
"""

import argparse
import hashlib
import os
import random
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True      # no __pycache__ in the source tree
import fuzz_shapes                  # noqa: E402 (the query shapes of fuzz_shapes.py)

FEATURES = {
    'expr-keys': 'partition keys that are expressions ((k % 1000), lower(r), (k + k2))',
    'multilevel': 'sub-partitioned partitions',
    'default-parts': 'DEFAULT partitions (list and range)',
    'null-keys': 'NULL partition keys (and list partitions accepting NULL)',
    'partial-hash': 'hash tables lacking some remainders',
    'replicas': 'colojoin.add_replica on some leaves',
    'reference': 'reference tables (one hash partition of modulus 1, copies on every node)',
    'dropped-cols': 'dropped columns on parents and attached leaves',
    'attach': 'leaves created apart (other column order) and attached',
    'remote-rename': 'foreign leaf columns with column_name options',
    'text-keys': 'text keys (collations C, POSIX, default)',
    'date-keys': 'date keys',
    'uuid-keys': 'uuid keys',
    'numeric-keys': 'numeric keys',
    'analyze': 'ANALYZE on some tables (and in half the worlds on every node)',
    'outer': 'LEFT, RIGHT and FULL joins',
    'cross': 'CROSS JOIN and comma joins',
    'semi': 'semi joins (EXISTS, IN)',
    'scalar-subqueries': 'correlated scalar subqueries (count, sum, min, max, avg; now and then HAVING) '
                         'compared in WHERE, correlated on the partition key or on other columns',
    'coordinator-rows': 'IN, EXISTS and NOT EXISTS over a VALUES list or generate_series (with NULLs), '
                        'rows the coordinator computes and broadcasts',
    'anti': 'anti joins (NOT EXISTS, LEFT JOIN ... IS NULL, NOT IN)',
    'anti-cols': 'columns of an anti-joined side in the output',
    'semi-under-outer': 'EXISTS in the ON clause of an outer join',
    'nonequi': 'join conditions that are not equalities of keys',
    'aggregates': 'GROUP BY, HAVING, aggregates, count(DISTINCT)',
    'distinct': 'SELECT DISTINCT',
    'limit': 'ORDER BY (over every output column) with LIMIT/OFFSET',
    'whole-row': 'whole-row references (t, t::text)',
    'no-column-moves': 'SELECT count(*) FROM x CROSS JOIN y and the like',
    'prepared': 'prepared statements under force_custom_plan and force_generic_plan',
    'settings': 'colojoin settings varied per query',
    'dimensions': 'tables that are not sharded (plain, materialized view, foreign table of one server) '
                  'joined with sharded ones and broadcast',
    'hints': 'BroadcastJoin(alias) hints naming a dimension table, PreAggregate(alias) on aggregating joins',
    'windows': 'window functions (PARTITION BY partition keys, other columns or nothing; frames, '
               'named windows, FILTER, a filter on a window result in an outer query)',
    'session-settings': 'DateStyle, IntervalStyle, extra_float_digits, TimeZone, bytea_output varied '
                        'per query (both sides)',
    'moved-joins': 'joins without an equality of keys (<, <>, BETWEEN, ON true, CROSS JOIN) and tables '
                   'joined to a colocated pair on other columns, one move after another, every join type',
    'lateral': 'LATERAL subqueries (CROSS, INNER and LEFT JOIN LATERAL; ORDER BY ... LIMIT, aggregates, '
               'GROUP BY, DISTINCT inside) correlated on the partition key or on other columns',
    'dual-repartition': 'two sharded tables joined on columns that are no partition key (inner, outer, '
                        'semi, anti; both sides repartitioned, or one broadcast), some with '
                        'Redistribute(a1 a2)',
    'read-after-write': 'the query run in a transaction that first wrote through colojoin (a row of one '
                        'of its sharded tables copied again, on both sides), rolled back after',
}
FEATURES.update(fuzz_shapes.FEATURES)

ROW_CAP = 50000          # rows read of one side before giving up (both: skipped)
SCHEMAS = ('fz_s', 'fz_p', 'fz_l', 'fz_m')
SERVERS = ('fz_n1', 'fz_n2', 'fz_n3')
REMOTE_SCHEMA = 'fz_r'


def log(*a):
    print(*a, flush=True)


def q_lit(s):
    return "'" + str(s).replace("'", "''") + "'"


def q_ident(s):
    if re.fullmatch(r'[a-z_][a-z0-9_]*', s):
        return s
    return '"' + s.replace('"', '""') + '"'


def md5_uuid(i):
    h = hashlib.md5(str(i).encode()).hexdigest()
    return '%s-%s-%s-%s-%s' % (h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])


# --------------------------------------------------------------------------
# the world: domains, partitioning schemes, tables
# --------------------------------------------------------------------------

COLS = ['k', 'k2', 'r', 'd', 'u', 'v', 's', 'n']
FAMILY = {'k': 'int', 'k2': 'int', 'r': 'text', 'd': 'date', 'u': 'uuid',
          'v': 'int', 's': 'text', 'n': 'num'}

# the columns of every dimension table (a table that is not sharded)
DCOLS = ['id', 'code', 'name', 'born', 'span', 'ratio', 'amt', 'tags', 'nums', 'ts', 'flag', 'blob']
DTYPES = {'id': 'int4', 'code': 'text', 'name': 'text', 'born': 'date', 'span': 'interval',
          'ratio': 'float8', 'amt': 'numeric', 'tags': 'text[]', 'nums': 'int4[]', 'ts': 'timestamptz',
          'flag': 'bool', 'blob': 'bytea'}
# text that COPY must escape, and its neighbours
TRICKY = [r"E'tab\there'", r"E'line\nbreak'", r"E'back\\slash'", "'it''s'", r"E'cr\rlf'", "''",
          "' lead'", "'trail '", r"E'\\N'", "'NULL'", "'{a,b}'", "'\"dq\"'", "'ünï ☃'",
          r"E'\\t not a tab'", "repeat('ab', 700)", r"E'mix\t\n\\\r'"]


class Domains:
    def __init__(self, rng):
        self.Rk = rng.choice([30, 100, 300])
        self.R2 = rng.choice([10, 50])
        self.Rr = rng.choice([8, 20, 60])
        self.Rd = rng.choice([20, 100])
        self.Ru = rng.choice([16, 64])

    # values (python, sql literal) a key expression can take, sorted
    def values(self, kexpr):
        name = kexpr['name']
        if name in ('k', 'abs(k)'):
            return [(i, str(i)) for i in range(self.Rk)]
        if name == '(k % 1000)':
            return [(i, str(i)) for i in range(min(self.Rk, 1000))]
        if name == '(k % 10)':
            return [(i, str(i)) for i in range(10)]
        if name == '(k + k2)':
            return [(i, str(i)) for i in range(self.Rk + self.R2 - 1)]
        if name == 'k2':
            return [(i, str(i)) for i in range(self.R2)]
        if name == 'r':
            vals = ['r%d' % i for i in range(self.Rr)] + ['R%d' % i for i in range(self.Rr)]
            return [(x, q_lit(x)) for x in sorted(vals)]
        if name == 'lower(r)':
            vals = ['r%d' % i for i in range(self.Rr)]
            return [(x, q_lit(x)) for x in sorted(vals)]
        if name == 'd':
            import datetime
            base = datetime.date(2020, 1, 1)
            return [(i, q_lit((base + datetime.timedelta(days=i)).isoformat()))
                    for i in range(self.Rd)]
        if name == 'u':
            vals = sorted(md5_uuid(i) for i in range(self.Ru))
            return [(x, q_lit(x)) for x in vals]
        raise ValueError(name)


# key expressions: name (over bare columns), template over alias {a}, family
KEYS = {
    'k': ('{a}.k', 'int', ['k'], False),
    'k2': ('{a}.k2', 'int', ['k2'], False),
    'r': ('{a}.r', 'text', ['r'], False),
    'd': ('{a}.d', 'date', ['d'], False),
    'u': ('{a}.u', 'uuid', ['u'], False),
    '(k % 1000)': ('({a}.k % 1000)', 'int', ['k'], True),
    '(k % 10)': ('({a}.k % 10)', 'int', ['k'], True),
    '(k + k2)': ('({a}.k + {a}.k2)', 'int', ['k', 'k2'], True),
    'abs(k)': ('abs({a}.k)', 'int', ['k'], True),
    'lower(r)': ('lower({a}.r)', 'text', ['r'], True),
}


def kexpr(name):
    t, fam, cols, is_expr = KEYS[name]
    return {'name': name, 'tmpl': t, 'family': fam, 'cols': cols, 'expr': is_expr}


def key_sql(k):
    """the key as written in PARTITION BY and over a row's bare columns"""
    if k['expr']:
        return '(%s)' % k['name'] if not k['name'].startswith('(') else '(%s)' % k['name']
    return k['name']


def bare(k):
    return k['name']


class Gen:
    """everything random about one world"""

    def __init__(self, seed, feats):
        self.rng = random.Random(seed)
        self.seed = seed
        self.f = feats

    def on(self, feat, p=1.0):
        return feat in self.f and self.rng.random() < p

    # -- partitioning schemes ---------------------------------------------

    def key_choices(self, strategy, level):
        rng = self.rng
        c = []
        if strategy == 'hash':
            c += [['k']] * 4 + [['k2']] * (1 if level else 0)
            if self.on('text-keys'):
                c += [['r'], ['k', 'r']]
            if self.on('uuid-keys'):
                c += [['u']]
            if self.on('date-keys'):
                c += [['d']]
            if self.on('expr-keys'):
                c += [['(k % 1000)'], ['lower(r)'] if 'text-keys' in self.f else ['(k + k2)'],
                      ['(k + k2)']]
        elif strategy == 'list':
            c += [['(k % 10)']] if self.on('expr-keys') else []
            c += [['k2']]
            if self.dom.Rk <= 100:
                c += [['k']] * 2
            if self.on('text-keys'):
                c += [['r']] * 2
                if self.on('expr-keys'):
                    c += [['lower(r)']] * 2
            if self.on('date-keys'):
                c += [['d']]
            if not c:
                c = [['k2']]
        else:
            c += [['k']] * 3 + [['k2']]
            if self.on('expr-keys'):
                c += [['(k + k2)'], ['abs(k)']]
            if self.on('text-keys'):
                c += [['r']]
            if self.on('date-keys'):
                c += [['d']]
            if self.on('uuid-keys'):
                c += [['u']]
        return [kexpr(n) for n in rng.choice(c)]

    def scheme(self, level=0, used=()):
        rng = self.rng
        strategy = rng.choice(['hash', 'hash', 'list', 'range'])
        for _ in range(10):
            keys = self.key_choices(strategy, level)
            if not any(c in used for k in keys for c in k['cols']):
                break
        else:
            strategy, keys = 'hash', [kexpr('k2')]
        s = {'strategy': strategy, 'keys': keys, 'parts': [], 'has_default': False}
        if strategy == 'hash':
            m = rng.choice([2, 3, 4, 4, 6, 8]) if level == 0 else rng.choice([2, 3])
            s['modulus'] = m
            for r in range(m):
                s['parts'].append({'bound': 'FOR VALUES WITH (MODULUS %d, REMAINDER %d)' % (m, r),
                                   'cond': ('satisfies_hash_partition({REL}::regclass, %d, %d, %s)'
                                            % (m, r, ', '.join(key_sql(k) for k in keys))),
                                   'rem': r})
        elif strategy == 'list':
            k = keys[0]
            vals = self.dom.values(k)
            np_ = rng.randint(2, 5) if level == 0 else rng.randint(2, 3)
            default = self.on('default-parts', 0.4)
            lists = [[] for _ in range(np_)]
            for v in vals:
                if (default or True) and rng.random() < 0.1:
                    continue        # to the default partition, or filtered out
                lists[rng.randrange(np_)].append(v[1])
            null_in = None
            if self.on('null-keys', 0.5):
                null_in = rng.randrange(np_)
            for i, l in enumerate(lists):
                items = list(l) + (['NULL'] if null_in == i else [])
                if not items:
                    continue
                cond = '(%s IN (%s)%s)' % (key_sql(k), ', '.join(l) if l else 'NULL',
                                             (' OR %s IS NULL' % key_sql(k)) if null_in == i else '')
                s['parts'].append({'bound': 'FOR VALUES IN (%s)' % ', '.join(items), 'cond': cond})
            if default:
                s['parts'].append({'bound': 'DEFAULT', 'cond': None})
                s['has_default'] = True
        else:
            k = keys[0]
            vals = self.dom.values(k)
            np_ = rng.randint(2, 5) if level == 0 else rng.randint(2, 3)
            splits = sorted(rng.sample(range(1, len(vals)), min(np_ - 1, len(vals) - 1)))
            edges = ['MINVALUE'] + [vals[i][1] for i in splits] + ['MAXVALUE']
            if rng.random() < 0.2:
                edges[0] = vals[rng.randrange(0, max(1, splits[0]))][1]
            if rng.random() < 0.2 and splits[-1] + 1 < len(vals):
                edges[-1] = vals[rng.randrange(splits[-1] + 1, len(vals))][1]
            skip = rng.randrange(len(edges) - 1) if rng.random() < 0.15 and len(edges) > 3 else -1
            for i in range(len(edges) - 1):
                if i == skip:
                    continue
                lo, hi = edges[i], edges[i + 1]
                conds = ['%s IS NOT NULL' % key_sql(k)]
                if lo != 'MINVALUE':
                    conds.append('%s >= %s' % (key_sql(k), lo))
                if hi != 'MAXVALUE':
                    conds.append('%s < %s' % (key_sql(k), hi))
                s['parts'].append({'bound': 'FOR VALUES FROM (%s) TO (%s)' % (lo, hi),
                                   'cond': '(' + ' AND '.join(conds) + ')'})
            if self.on('default-parts', 0.4):
                s['parts'].append({'bound': 'DEFAULT', 'cond': None})
                s['has_default'] = True
        if level == 0 and self.on('multilevel', 0.3):
            used = set(c for k in keys for c in k['cols'])
            for p in s['parts']:
                if rng.random() < 0.4:
                    p['sub'] = self.scheme(1, used)
        for p in s['parts']:
            self.place(p)
        return s

    def place(self, p):
        if p.get('sub'):
            return
        p['node'] = self.rng.randint(1, 3)

    # -- tables -------------------------------------------------------------

    def table(self, name, scheme, variant_of=None):
        import copy
        rng = self.rng
        t = {'name': name}
        s = copy.deepcopy(scheme)
        if variant_of is not None:
            v = rng.random()
            leaves = list(iter_leaves(s))
            if v < 0.1:
                for p in leaves:
                    p['node'] = p['node'] % 3 + 1
                t['variant'] = 'shifted placement'
            elif v < 0.2:
                for p in leaves:
                    if rng.random() < 0.35:
                        p['node'] = rng.randint(1, 3)
                t['variant'] = 'partly shared placement'
            elif v < 0.28 and s['strategy'] == 'hash' and 'partial-hash' in self.f and len(s['parts']) > 2:
                keep = rng.sample(range(len(s['parts'])), len(s['parts']) - 1)
                s['parts'] = [p for i, p in enumerate(s['parts']) if i in keep]
                t['variant'] = 'lacks a remainder'
            elif v < 0.35 and s['strategy'] == 'hash':
                m = s['modulus'] * 2
                s['modulus'] = m
                s['parts'] = [{'bound': 'FOR VALUES WITH (MODULUS %d, REMAINDER %d)' % (m, r),
                               'cond': ('satisfies_hash_partition({REL}::regclass, %d, %d, %s)'
                                        % (m, r, ', '.join(key_sql(k) for k in s['keys']))),
                               'node': r % 3 + 1} for r in range(m)]
                t['variant'] = 'double modulus'
            elif v < 0.45 and 'reference' in self.f:
                s = {'strategy': 'hash', 'keys': s['keys'], 'modulus': 1, 'has_default': False,
                     'parts': [{'bound': 'FOR VALUES WITH (MODULUS 1, REMAINDER 0)',
                                'cond': ('satisfies_hash_partition({REL}::regclass, 1, 0, %s)'
                                         % ', '.join(key_sql(k) for k in s['keys'])),
                                'rem': 0, 'node': rng.randint(1, 3)}]}
                t['variant'] = 'reference'
                t['reference'] = True
            else:
                t['variant'] = 'colocated'
        elif s['strategy'] == 'hash' and self.on('partial-hash', 0.1) and len(s['parts']) > 2:
            del s['parts'][rng.randrange(len(s['parts']))]
        t['scheme'] = s
        # column types
        ktypes = ['int4', 'int8', 'int2']
        t['ktype'] = rng.choice(ktypes) if variant_of is None else \
            (variant_of['ktype'] if rng.random() < 0.7 else rng.choice(ktypes))
        if self.on('numeric-keys', 0.12):
            t['ktype'] = 'numeric'
        keycols = set(c for k in s['keys'] for c in k['cols'])
        colls = ['', ' COLLATE "C"', ' COLLATE "POSIX"'] if 'text-keys' in self.f else ['']
        if variant_of is not None and 'r' in keycols:
            t['rcoll'] = variant_of['rcoll']
        else:
            t['rcoll'] = rng.choice(colls)
        t['types'] = {'k': t['ktype'], 'k2': 'int4', 'r': 'text' + t['rcoll'], 'd': 'date',
                      'u': 'uuid', 'v': 'int4', 's': 'text', 'n': 'numeric(10,2)'}
        order = list(COLS)
        rng.shuffle(order)
        t['order'] = order
        t['dropped'] = []
        if self.on('dropped-cols', 0.4):
            for i in range(rng.randint(1, 2)):
                t['dropped'].append((rng.randrange(len(order) + 1), 'x_drop%d' % i))
        # data
        dom = self.dom
        N = rng.choice([0, 5, 40, 40, 150, 150, 150, 600, 600, 2500])
        N = min(N, dom.Rk * 10)
        t['N'] = N
        nulls = 'null-keys' in self.f
        a = lambda: rng.choice([1, 3, 7, 11, 13, 17, 31, 37])
        b = lambda: rng.randrange(100)

        def maybe_null(e, p):
            if nulls and rng.random() < p:
                return 'CASE WHEN g %% %d = 0 THEN NULL ELSE %s END' % (rng.choice([7, 11, 13, 29]), e)
            return e
        kb = '(g * %d + %d) %% %d' % (a(), b(), dom.Rk)
        if N <= 600 and rng.random() < 0.3:
            kb = 'CASE WHEN g %% 3 = 0 THEN %d ELSE %s END' % (rng.randrange(dom.Rk), kb)
            t['skewed'] = True
        if t['ktype'] == 'numeric' and rng.random() < 0.5:
            kb = '(%s)::numeric + CASE WHEN g %% 7 = 3 THEN 0.5 ELSE 0 END' % kb
        rb = "'r' || ((g * %d + %d) %% %d)" % (a(), b(), dom.Rr)
        rb = 'CASE WHEN g %% 5 = 0 THEN upper(%s) ELSE %s END' % (rb, rb)
        t['gen'] = {
            'k': '(%s)::%s' % (maybe_null(kb, 0.4), t['ktype']),
            'k2': '(%s)::int4' % maybe_null('(g * %d) %% %d' % (a(), dom.R2), 0.2),
            'r': '(%s)' % maybe_null(rb, 0.3),
            'd': maybe_null("date '2020-01-01' + ((g * %d) %% %d)::int" % (a(), dom.Rd), 0.2),
            'u': maybe_null('md5(((g * %d) %% %d)::text)::uuid' % (a(), dom.Ru), 0.2),
            'v': '(%s)::int4' % maybe_null('(g * %d + %d) %% 100' % (a(), b()), 0.3),
            's': "'s' || (g % 13)",
            'n': '((((g * %d) %% 1000) / 4.0))::numeric(10,2)' % a(),
        }
        t['analyze'] = self.on('analyze', 0.6)
        t['replicas'] = self.on('replicas', 0.3)
        return t


def iter_leaves(s):
    for p in s['parts']:
        if p.get('sub'):
            yield from iter_leaves(p['sub'])
        else:
            yield p


def route_filter(s, rel):
    """a predicate over a row's bare columns: true when the row has a leaf to
    go to (None: every row has)"""
    def cond(p):
        return 'coalesce(%s, false)' % p['cond'].replace('{REL}', q_lit(rel))

    def sub(p):
        return route_filter(p['sub'], p['rel']) if p.get('sub') else None
    nondef = [p for p in s['parts'] if p['cond'] is not None]
    terms = []
    for p in nondef:
        sf = sub(p)
        terms.append(cond(p) if sf is None else '(%s AND %s)' % (cond(p), sf))
    for p in s['parts']:
        if p['cond'] is None:
            sf = sub(p)
            rest = ('NOT (%s)' % ' OR '.join(cond(x) for x in nondef)) if nondef else 'true'
            terms.append(rest if sf is None else '(%s AND %s)' % (rest, sf))
    if s['has_default'] and not any(p.get('sub') for p in s['parts']):
        return None
    return '(' + (' OR '.join(terms) or 'false') + ')'


class World:
    def __init__(self, seed, feats):
        self.seed = seed
        g = Gen(seed, feats)
        self.g = g
        rng = g.rng
        g.dom = Domains(rng)
        self.dom = g.dom
        self.tables = []
        n = 0
        nfam = rng.randint(2, 3)
        for fi in range(nfam):
            sch = g.scheme()
            base = None
            for j in range(rng.randint(2, 3)):
                t = g.table('tab%d' % n, sch, base)
                t['family'] = fi
                if base is None:
                    base = t
                    t['variant'] = 'family %d base' % fi
                self.tables.append(t)
                n += 1
        for j in range(rng.randint(1, 2)):
            t = g.table('tab%d' % n, g.scheme())
            t['family'] = 100 + j
            t['variant'] = 'independent'
            self.tables.append(t)
            n += 1
        self.stmts = []     # (tables or None, target, sql); target 'c' or node number
        # half the worlds have the nodes analyze their tables too (statistics
        # colojoin reads there: the groups a move aggregated first would send)
        self.node_analyze = 'analyze' in feats and random.Random(seed * 17 + 3).random() < 0.5
        self.emit_ddl()
        self.dims = []
        self.deps = {}      # dimension name -> the names it reads (a materialized view's base)
        if 'dimensions' in feats:
            self.make_dims(random.Random(seed * 13 + 5))

    def add(self, tabs, target, sql):
        self.stmts.append((tabs, target, sql))

    def coldef(self, t, c, rename=False):
        ty = t['types'][c]
        coll = ''
        if ' COLLATE ' in ty:
            ty, coll = ty.split(' COLLATE ')
            coll = ' COLLATE ' + coll
        opt = " OPTIONS (column_name '%s_remote')" % c if rename else ''
        return '%s %s%s%s' % (c, ty, opt, coll)

    def emit_ddl(self):
        g = self.g
        rng = g.rng
        for t in self.tables:
            name = t['name']
            T = [name]
            cols = list(t['order'])
            defs = [self.coldef(t, c) for c in cols]
            for pos, dname in t['dropped']:
                defs.insert(min(pos, len(defs)), '%s int' % dname)
            s = t['scheme']
            self.add(T, 'c', 'CREATE TABLE fz_s.%s (%s) PARTITION BY %s (%s)' % (
                name, ', '.join(defs), s['strategy'].upper(),
                ', '.join(key_sql(k) for k in s['keys'])))
            for pos, dname in t['dropped']:
                self.add(T, 'c', 'ALTER TABLE fz_s.%s DROP COLUMN %s' % (name, dname))
            self.add(T, 'c', 'CREATE TABLE fz_l.%s (%s)' % (name, ', '.join(self.coldef(t, c) for c in cols)))
            self.emit_parts(t, s, 'fz_s.' + name, name)

    def emit_parts(self, t, s, parent, prefix):
        g = self.g
        rng = g.rng
        T = [t['name']]
        for i, p in enumerate(s['parts']):
            leaf = '%s_%s' % (prefix, 'def' if p['bound'] == 'DEFAULT' else 'p%d' % i)
            p['rel'] = 'fz_p.' + leaf
            if p.get('sub'):
                sub = p['sub']
                self.add(T, 'c', 'CREATE TABLE fz_p.%s PARTITION OF %s %s PARTITION BY %s (%s)' % (
                    leaf, parent, p['bound'], sub['strategy'].upper(),
                    ', '.join(key_sql(k) for k in sub['keys'])))
                self.emit_parts(t, sub, 'fz_p.' + leaf, leaf)
                continue
            node = p['node']
            p['leaf'] = leaf
            rename = g.on('remote-rename', 0.15) and 'attach' in g.f
            attach = rename or g.on('attach', 0.25)
            rcols = list(COLS)
            rng.shuffle(rcols)
            self.add(T, node, 'CREATE TABLE %s.%s (%s)' % (
                REMOTE_SCHEMA, leaf, ', '.join(('%s_remote' % c if rename else c) + ' ' + t['types'][c]
                                               for c in rcols)))
            srv = 'fz_n%d' % node
            opts = "OPTIONS (schema_name '%s', table_name '%s')" % (REMOTE_SCHEMA, leaf)
            if attach:
                lcols = list(COLS)
                rng.shuffle(lcols)
                defs = [self.coldef(t, c, rename) for c in lcols]
                junk = g.on('dropped-cols', 0.4)
                if junk:
                    defs.insert(rng.randrange(len(defs) + 1), 'x_leafjunk int')
                self.add(T, 'c', 'CREATE FOREIGN TABLE fz_p.%s (%s) SERVER %s %s' % (
                    leaf, ', '.join(defs), srv, opts))
                if junk:
                    self.add(T, 'c', 'ALTER TABLE fz_p.%s DROP COLUMN x_leafjunk' % leaf)
                self.add(T, 'c', 'ALTER TABLE %s ATTACH PARTITION fz_p.%s %s' % (parent, leaf, p['bound']))
            else:
                self.add(T, 'c', 'CREATE FOREIGN TABLE fz_p.%s PARTITION OF %s %s SERVER %s %s' % (
                    leaf, parent, p['bound'], srv, opts))

    # -- dimension tables: not sharded, the same rows in fz_s and fz_l --------

    def make_dims(self, rng):
        d = self.dom
        nd = rng.randint(1, 3)
        kinds = ['plain'] + [rng.choice(['plain', 'matview', 'matview', 'foreign', 'foreign'])
                             for _ in range(nd - 1)]
        if nd == 1 and rng.random() < 0.4:
            kinds = ['foreign']
        for i, kind in enumerate(kinds):
            name = {'plain': 'dim', 'matview': 'mdim', 'foreign': 'fdim'}[kind] + str(i)
            if kind == 'matview':
                base = rng.choice([x for x in self.dims if x['kind'] == 'plain'])
                t = dict(base)
                t.update(name=name, kind=kind, base=base['name'], order=list(DCOLS),
                         pred=rng.choice(['id % 2 = 0', 'name IS NOT NULL', 'true', 'ratio > 1 OR id IS NULL']),
                         child=None, analyze=rng.random() < 0.5)
                rng.shuffle(t['order'])
                self.deps[name] = [base['name']]
                self.dims.append(t)
                continue
            ref = rng.choice(['k', 'k', 'k2', 'v'])
            R = {'k': d.Rk, 'k2': d.R2, 'v': 100}[ref]
            idmod = R + rng.choice([0, R // 4 + 1, 3])
            N = rng.choice([0, 1, 5, 20, 40, 40, 80, 150])
            a = lambda: rng.choice([1, 3, 7, 11, 13])
            order = list(DCOLS)
            rng.shuffle(order)
            t = {'name': name, 'kind': kind, 'dim': True, 'ref': ref, 'idmod': idmod, 'N': N,
                 'ccoll': rng.choice(['', '', ' COLLATE "C"']), 'order': order,
                 'node': rng.randint(1, 3), 'rename': kind == 'foreign' and rng.random() < 0.3,
                 'analyze': rng.random() < 0.5, 'child': None, 'base': None}
            nullmod = rng.choice([11, 13, 29, 1000003])
            t['gen'] = {
                'id': 'CASE WHEN g %% %d = 0 THEN NULL ELSE (g * %d + %d) %% %d END'
                      % (nullmod, a(), rng.randrange(50), idmod),
                'code': ("CASE g %% 9 WHEN 0 THEN NULL WHEN 1 THEN E'r1\\t' WHEN 2 THEN upper('r' || (g %% %d)) "
                         "ELSE 'r' || ((g * %d) %% %d) END" % (d.Rr, a(), d.Rr)),
                'name': 'CASE g %% %d %s ELSE %s END' % (
                    len(TRICKY) + 3, ' '.join('WHEN %d THEN %s' % (j, x) for j, x in enumerate(TRICKY)),
                    "'name ' || g"),
                'born': ("CASE g %% 17 WHEN 0 THEN NULL WHEN 1 THEN date 'infinity' WHEN 2 THEN date '-infinity' "
                         "WHEN 3 THEN date '0044-03-15 BC' ELSE date '2020-01-01' + ((g * %d) %% %d) END"
                         % (a(), d.Rd)),
                'span': ("CASE WHEN g % 11 = 0 THEN NULL WHEN g % 11 = 1 THEN interval '1 mon -2 days 03:00' "
                         "ELSE (CASE WHEN g % 5 = 0 THEN -1 ELSE 1 END) * (g * interval '1 day 3 hours' "
                         "+ (g % 3) * interval '1 mon' + (g % 4) * interval '0.25 sec') END"),
                'ratio': ("CASE g % 19 WHEN 0 THEN NULL WHEN 1 THEN 'NaN'::float8 WHEN 2 THEN 'Infinity'::float8 "
                          "WHEN 3 THEN '-Infinity'::float8 WHEN 4 THEN 4.9e-324::float8 "
                          "WHEN 5 THEN 1.7976931348623157e308::float8 WHEN 6 THEN 0.1::float8 + 0.2::float8 "
                          "ELSE (g / 7.0)::float8 END"),
                'amt': ("CASE g %% 23 WHEN 0 THEN NULL WHEN 1 THEN 'NaN'::numeric "
                        "WHEN 2 THEN 12345678901234567890.125 ELSE round(((g * %d) %% 1000) / 8.0, 3) END" % a()),
                'tags': ("CASE g % 7 WHEN 0 THEN NULL WHEN 1 THEN '{}'::text[] WHEN 2 THEN ARRAY['t' || g, NULL] "
                         "WHEN 3 THEN ARRAY['a,b', 'q\"uote', E'back\\\\slash', '{br}', 'NULL', ''] "
                         "WHEN 4 THEN ARRAY[E'tab\\t', E'nl\\n'] ELSE ARRAY['x' || (g % 5)] END"),
                'nums': ("CASE g % 6 WHEN 0 THEN NULL WHEN 1 THEN '{}'::int4[] WHEN 2 THEN '{{1,2},{3,4}}'::int4[] "
                         "WHEN 3 THEN '[0:1]={7,8}'::int4[] ELSE ARRAY[g % 10, -(g % 4)] END"),
                'ts': ("CASE g % 13 WHEN 0 THEN NULL WHEN 1 THEN timestamptz 'infinity' "
                       "ELSE timestamptz '2024-03-01 10:00:00+00' + g * interval '7 hours 13 minutes 0.5 sec' END"),
                'flag': 'CASE g % 5 WHEN 0 THEN NULL ELSE g % 3 = 0 END',
                'blob': ("CASE g % 8 WHEN 0 THEN NULL WHEN 1 THEN '\\x'::bytea WHEN 2 THEN '\\x005c0a09ff'::bytea "
                         "ELSE convert_to('b' || g, 'UTF8') END"),
            }
            if kind == 'plain' and rng.random() < 0.2:
                t['child'] = rng.choice([3, 10, 30])     # an inheritance child with so many rows
            self.dims.append(t)
            self.emit_dim_ddl(t)

    def dim_coldefs(self, t, order=None, rename=False):
        out = []
        for c in order or t['order']:
            ty = DTYPES[c]
            opt = " OPTIONS (column_name '%s_remote')" % c if rename else ''
            out.append('%s %s%s%s' % (c, ty, opt, t['ccoll'] if c == 'code' else ''))
        return ', '.join(out)

    def emit_dim_ddl(self, t):
        T = [t['name']]
        name = t['name']
        if t['kind'] == 'foreign':
            rcols = list(DCOLS)
            random.Random(self.seed * 31 + len(self.dims)).shuffle(rcols)
            self.add(T, t['node'], 'CREATE TABLE %s.%s (%s)' % (
                REMOTE_SCHEMA, name, ', '.join('%s %s%s' % (c + ('_remote' if t['rename'] else ''), DTYPES[c],
                                                          t['ccoll'] if c == 'code' else '') for c in rcols)))
            self.add(T, 'c', "CREATE FOREIGN TABLE fz_s.%s (%s) SERVER fz_n%d OPTIONS (schema_name '%s', "
                     "table_name '%s')" % (name, self.dim_coldefs(t, rename=t['rename']), t['node'],
                                           REMOTE_SCHEMA, name))
        else:
            self.add(T, 'c', 'CREATE TABLE fz_s.%s (%s)' % (name, self.dim_coldefs(t)))
        self.add(T, 'c', 'CREATE TABLE fz_l.%s (%s)' % (name, self.dim_coldefs(t)))
        if t['child']:
            for sch in ('fz_s', 'fz_l'):
                self.add(T, 'c', 'CREATE TABLE %s.%s_c () INHERITS (%s.%s)' % (sch, name, sch, name))

    def dim_data_sql(self):
        out = []
        for t in self.dims:
            T = [t['name']]
            name = t['name']
            if t['kind'] == 'matview':
                for sch in ('fz_s', 'fz_l'):
                    out.append((T, 'c', 'CREATE MATERIALIZED VIEW %s.%s AS SELECT %s FROM %s.%s WHERE %s' % (
                        sch, name, ', '.join(t['order']), sch, t['base'], t['pred'])))
            else:
                cols = t['order']
                for sch in ('fz_s', 'fz_l'):
                    out.append((T, 'c', 'INSERT INTO %s.%s (%s) SELECT %s FROM generate_series(1, %d) g' % (
                        sch, name, ', '.join(cols), ', '.join(t['gen'][c] for c in cols), t['N'])))
                    if t['child']:
                        out.append((T, 'c', 'INSERT INTO %s.%s_c (%s) SELECT %s FROM generate_series(%d, %d) g' % (
                            sch, name, ', '.join(cols), ', '.join(t['gen'][c] for c in cols), t['N'] + 1,
                            t['N'] + t['child'])))
            if t['analyze']:
                out.append((T, 'c', 'ANALYZE fz_s.%s' % name))
            out.append((T, 'c', 'ANALYZE fz_l.%s' % name))
        return out

    def data_sql(self):
        out = []
        rng = self.g.rng
        for t in self.tables:
            name = t['name']
            T = [name]
            cols = t['order']
            filt = route_filter(t['scheme'], 'fz_s.' + name)
            src = 'SELECT %s FROM generate_series(1, %d) g' % (
                ', '.join('%s AS %s' % (t['gen'][c], c) for c in cols), t['N'])
            for sch in ('fz_s', 'fz_l'):
                out.append((T, 'c', 'INSERT INTO %s.%s (%s) SELECT * FROM (%s) src%s' % (
                    sch, name, ', '.join(cols), src, (' WHERE ' + filt) if filt else '')))
            if t['analyze']:
                out.append((T, 'c', 'ANALYZE fz_s.%s' % name))
            out.append((T, 'c', 'ANALYZE fz_l.%s' % name))
        for t in self.tables:
            if t.get('reference'):
                # a copy on every node, written through colojoin from then on
                for p in iter_leaves(t['scheme']):
                    for other in (n for n in (1, 2, 3) if n != p['node']):
                        out.append(([t['name']], 'c', "SELECT colojoin.add_replica('fz_p.%s', 'fz_n%d')"
                                    % (p['leaf'], other)))
                continue
            if not t['replicas']:
                continue
            for p in iter_leaves(t['scheme']):
                if rng.random() < 0.5:
                    other = rng.choice([n for n in (1, 2, 3) if n != p['node']])
                    out.append(([t['name']], 'c', "SELECT colojoin.add_replica('fz_p.%s', 'fz_n%d')"
                                % (p['leaf'], other)))
        return out + self.dim_data_sql()

    def describe(self, t):
        if t.get('dim'):
            return '%s %s N=%d%s%s' % (t['name'], t['kind'] + (' of ' + t['base'] if t['base'] else '') +
                                       (' on n%d' % t['node'] if t['kind'] == 'foreign' else ''),
                                       t['N'], ' id~%s' % t['ref'],
                                       (' +%d inherited' % t['child']) if t['child'] else '')
        s = t['scheme']

        def d(s):
            parts = []
            for p in s['parts']:
                x = p['bound'].replace('FOR VALUES ', '')
                if p.get('sub'):
                    x += ' -> %s(%s)[%s]' % (p['sub']['strategy'], ','.join(k['name'] for k in p['sub']['keys']),
                                             d(p['sub']))
                else:
                    x += '@n%d' % p['node']
                parts.append(x)
            return '; '.join(parts)
        return '%s %s(%s) k:%s N=%d %s' % (t['name'], s['strategy'], ','.join(k['name'] for k in s['keys']),
                                           t['ktype'], t['N'], t.get('variant', ''))


# --------------------------------------------------------------------------
# queries
# --------------------------------------------------------------------------

AL = re.compile(r'\b([aq]\d+)\b')
fuzz_shapes.bind(sys.modules[__name__])


class Query:
    def __init__(self):
        self.items = []      # dicts: alias, table, jt, on (list), anti
        self.where = []
        self.agg = False
        self.select = []
        self.group = []
        self.aggs = []
        self.having = []
        self.distinct = False
        self.order = False
        self.limit = None
        self.offset = None
        self.params = []     # literal text of param i
        self.prep = None     # None, force_custom_plan, force_generic_plan
        self.gucs = []       # (name, value) for the sharded run
        self.sess = []       # (name, value) for both runs (DateStyle and the like)
        self.hint = None     # (alias, where): /*+ BroadcastJoin(alias) */ leading or after SELECT
        self.dhint = None    # (a, b): /*+ Redistribute(a b) */ leading
        self.phint = None    # alias: /*+ PreAggregate(alias) */ leading
        self.has_dim = False
        self.dim_aliases = []
        self.dgroup = []     # GROUP BY a dimension column, asked for while joining it
        self.special = None
        self.wsel = []       # (alias wN, window function call) in the output
        self.windows = []    # (name, spec) of the WINDOW clause
        self.wfilter = []    # conditions on wN of an outer query over the window query
        self.raw = None      # a sharded table written first, in the query's transaction
        self.subs = {}       # name -> subquery (fuzz_shapes.render_sub), {Sname} in the text
        self.ctes = []       # (cte name, sub name, 'MATERIALIZED ' or the like) of the WITH clause
        self.orderby = None  # ORDER BY these instead of every output column
        self.ties = False    # FETCH FIRST n ROWS WITH TIES instead of LIMIT n
        self.ofilter = []    # conditions on the output columns c1.., in an outer query

    def copy(self):
        import copy
        return copy.deepcopy(self)


class QGen(fuzz_shapes.Shapes):
    def __init__(self, world, rng, feats):
        self.w = world
        self.rng = rng
        self.f = feats
        self.dom = world.dom
        # dimension choices draw from a stream of their own, so that the
        # queries without dimensions stay those of the same seed before
        self.drng = random.Random(world.seed * 7 + 2)
        self.dim_share = 0.25
        # windows too: the queries without windows stay those of the seed
        self.wrng = random.Random(world.seed * 7 + 3)
        self.win_share = 0.15
        # scalar subqueries too
        self.srng = random.Random(world.seed * 7 + 11)
        self.scalar_share = 0.15
        # and VALUES lists and generate_series in IN / EXISTS
        self.crng = random.Random(world.seed * 7 + 12)
        self.coord_share = 0.12
        # moved joins too, and they take the whole query: the other
        # queries of a seed stay the same ones
        self.mrng = random.Random(world.seed * 7 + 5)
        self.moved_share = 0.12
        self.moved = False
        # and LATERAL subqueries
        self.lrng = random.Random(world.seed * 7 + 4)
        self.lat_share = 0.15
        # and the joins of two tables on no key (dual repartition)
        self.xrng = random.Random(world.seed * 7 + 5)
        # and PreAggregate hints
        self.prng = random.Random(world.seed * 7 + 6)
        self.dual_share = 0.1
        # and multi-joins whose broadcasts are off (multi-stage plans)
        self.srng = random.Random(world.seed * 7 + 11)
        # the shapes of fuzz_shapes, each a stream of its own
        self.shapes = [('table-aggs', random.Random(world.seed * 7 + 8), 0.1, self.gen_table_aggs),
                       ('multi-joins', random.Random(world.seed * 7 + 9), 0.1, self.gen_multi),
                       ('subqueries', random.Random(world.seed * 7 + 10), 0.15, self.gen_subq)]

    def coordinator_rows_pred(self, a):
        """a.v or a.k2 against rows no node holds: a VALUES list (NULLs
        too) or generate_series, in IN, EXISTS or NOT EXISTS"""
        r = self.crng
        col = '%s.%s' % (a, r.choice(['v', 'k2']))
        if r.random() < 0.4:
            lo = r.randint(-5, 60)
            rel = 'generate_series(%d, %d, %d) c(x)' % (lo, lo + r.randint(0, 60), r.randint(1, 4))
        else:
            vals = [r.choice(['NULL'] + [str(r.randint(0, 100))] * 4) for _ in range(r.randint(1, 6))]
            rel = '(VALUES %s) c(x)' % ', '.join('(%s::int)' % v for v in vals)
        kind = r.choice(['IN', 'EXISTS', 'NOT EXISTS'])
        if kind == 'IN':
            return '%s IN (SELECT c.x FROM %s)' % (col, rel)
        return '%s (SELECT FROM %s WHERE c.x = %s)' % (kind, rel, col)

    def on(self, feat, p=1.0):
        return feat in self.f and self.rng.random() < p

    def const(self, q, col, allow_param=True):
        """a literal for column (or key expression) name col, maybe as a parameter"""
        rng = self.rng
        d = self.dom
        fam = FAMILY.get(col)
        if col in KEYS and col not in FAMILY:
            vals = d.values(kexpr(col))
            lit = rng.choice(vals)[1] if rng.random() < 0.9 else ('1000' if KEYS[col][1] == 'int' else "'zz'")
        elif fam == 'int' or fam == 'num':
            R = {'k': d.Rk, 'k2': d.R2, 'v': 100, 'n': 250}[col]
            lit = str(rng.randrange(-1, R + 1))
            if fam == 'num' and rng.random() < 0.3:
                lit += '.5'
        elif col == 'r':
            lit = q_lit(rng.choice('rR') + str(rng.randrange(d.Rr + 1)))
        elif col == 's':
            lit = q_lit('s%d' % rng.randrange(14))
        elif col == 'd':
            import datetime
            lit = "date " + q_lit((datetime.date(2020, 1, 1) + datetime.timedelta(days=rng.randrange(d.Rd + 1))).isoformat())
        elif col == 'u':
            lit = q_lit(md5_uuid(rng.randrange(d.Ru + 1)))
        else:
            raise ValueError(col)
        if allow_param and q.prep and rng.random() < 0.6:
            q.params.append(lit)
            return '{P%d}' % (len(q.params) - 1)
        return lit

    def colref(self, a, t):
        """a column or key expression of alias a (table t), with its const column"""
        rng = self.rng
        if t.get('dim'):
            return self.dim_colref(a, t), None
        if rng.random() < 0.45:
            k = rng.choice(t['scheme']['keys'])
            return k['tmpl'].format(a=a), k['name']
        c = rng.choice(COLS)
        if c == 'r' and rng.random() < 0.3:
            return 'lower(%s.r)' % a, 'lower(r)'
        return '%s.%s' % (a, c), c

    def filt(self, q, a, t):
        rng = self.rng
        if t.get('dim'):
            return self.dim_filt(q, a, t)
        e, c = self.colref(a, t)
        x = rng.random()
        if x < 0.35:
            return '%s = %s' % (e, self.const(q, c))
        if x < 0.5:
            return '%s IN (%s)' % (e, ', '.join(self.const(q, c) for _ in range(rng.randint(1, 4))))
        if x < 0.65:
            lo, hi = sorted([self.const(q, c, False), self.const(q, c, False)])
            return '%s BETWEEN %s AND %s' % (e, lo, hi)
        if x < 0.75:
            return '%s %s %s' % (e, rng.choice(['<', '<=', '>', '>=', '<>']), self.const(q, c))
        if x < 0.82:
            return '%s IS %sNULL' % (e, rng.choice(['', 'NOT ']))
        if x < 0.9:
            return '(%s = %s OR %s = %s)' % (e, self.const(q, c), e, self.const(q, c))
        if x < 0.95:
            return 'NOT (%s = %s)' % (e, self.const(q, c))
        return '%s.v %% 3 = %d' % (a, rng.randrange(3))

    def eq(self, ea, ta, ca, eb, tb, cb):
        """ea = eb; ca and cb: the columns they are of, for their collations"""
        def coll(t, c):
            return t['rcoll'] if c == 'r' else ''
        if FAMILY.get(ca) == 'text' and coll(ta, ca) != coll(tb, cb):
            return '%s = %s COLLATE "C"' % (ea, eb)
        return '%s = %s' % (ea, eb)

    def keyeq(self, a, ta, b, tb):
        """equate the partition keys of a with the same expressions of b"""
        rng = self.rng
        conds = []
        if rng.random() < 0.5 or not any(k['expr'] for k in ta['scheme']['keys']):
            for k in ta['scheme']['keys']:
                conds.append(self.eq(k['tmpl'].format(a=a), ta, k['cols'][0],
                                     k['tmpl'].format(a=b), tb, k['cols'][0]))
        else:
            for k in ta['scheme']['keys']:
                for c in k['cols']:
                    conds.append(self.eq('%s.%s' % (a, c), ta, c, '%s.%s' % (b, c), tb, c))
        return conds

    def joincond(self, q, x, tx, y, ty, full=False):
        """conditions joining new alias x to existing alias y (full: only
        equalities, as PostgreSQL requires for FULL JOIN)"""
        rng = self.rng
        r = rng.random() * (0.8 if full else 1)
        if r < 0.65:
            conds = self.keyeq(x, tx, y, ty) if rng.random() < 0.6 else self.keyeq(y, ty, x, tx)
        elif r < 0.8:
            c = rng.choice(COLS)
            c2 = c if rng.random() < 0.7 else rng.choice([cc for cc in COLS if FAMILY[cc] == FAMILY[c]])
            conds = [self.eq('%s.%s' % (x, c), tx, c, '%s.%s' % (y, c2), ty, c2)]
        elif not self.on('nonequi'):
            conds = ['%s.k = %s.k' % (x, y)]
        elif r < 0.87:
            conds = ['%s.k = %s.k + 0' % (x, y)]
        elif r < 0.93:
            conds = ['(%s.k = %s.k OR %s.v = %s.v)' % (x, y, x, y)]
        else:
            conds = ['%s.k2 = %s.k2' % (x, y), '%s.v < %s.v' % (x, y)]
        if full:
            return conds
        if rng.random() < 0.25:
            conds.append(self.filt(q, x, tx))
        if rng.random() < 0.1:
            conds.append('%s.v %s %s.v' % (x, rng.choice(['<', '<>', '>=']), y))
        return conds

    def fanout(self, t):
        """at most how many rows of t one row may join (on the smallest domain)"""
        d = self.dom
        f = t['N'] / min(d.Rk, d.R2, d.Rr, d.Rd, d.Ru)
        if t.get('skewed'):
            f = max(f, t['N'] / 3)
        return max(1.0, f)

    def small(self, t, n=600):
        return t['N'] <= n

    def correlation(self, q, sa, ts, outer, tout):
        """(conditions correlating subquery alias sa of ts with outer, maybe a
        filter of sa): the partition keys equated mostly, else one column"""
        rng = self.rng
        if rng.random() < 0.6:
            corr = self.keyeq(sa, ts, outer, tout)
        else:
            c = rng.choice(['k', 'k2', 'v', 'r', 'd'])
            corr = [self.eq('%s.%s' % (sa, c), ts, c, '%s.%s' % (outer, c), tout, c)]
        extra = [self.filt(q, sa, ts)] if rng.random() < 0.4 else []
        return corr, extra

    def subq(self, q, outer, tout, depth_ok=True):
        """EXISTS / IN / NOT EXISTS / NOT IN over another table"""
        rng = self.rng
        if tout.get('dim'):
            return self.dim_subq(q, outer, tout, sharded_inside=True)
        ts = rng.choice(self.w.tables)
        sa = 'q%d' % (self.nsub)
        self.nsub += 1
        if self.moved and rng.random() < 0.5 and ts['N'] <= 2000:
            corr = ['%s.v %s %s.v' % (sa, rng.choice(['<', '>', '<>']), outer)]
            s = 'EXISTS (SELECT 1 FROM %s %s WHERE %s)' % (ts['name'], sa, ' AND '.join(corr))
            return ('NOT ' + s) if 'anti' in self.f and rng.random() < 0.5 else s
        corr, extra = self.correlation(q, sa, ts, outer, tout)
        kinds = []
        if 'semi' in self.f:
            kinds += ['exists', 'in', 'in']
        if 'anti' in self.f:
            kinds += ['notexists', 'notexists', 'notin']
        kind = rng.choice(kinds)
        if kind in ('exists', 'notexists'):
            s = 'EXISTS (SELECT 1 FROM %s %s WHERE %s)' % (ts['name'], sa, ' AND '.join(corr + extra))
            return ('NOT ' + s) if kind == 'notexists' else s
        # IN: the correlation's first equality becomes the IN's columns
        lhs, rhs = [], []
        for c in corr:
            m = re.match(r'(.*) = (.*?)( COLLATE "C")?$', c)
            a_, b_ = m.group(1), m.group(2)
            if sa in b_:
                a_, b_ = b_, a_
            lhs.append(b_ + (m.group(3) or ''))
            rhs.append(a_)
        if rng.random() < 0.3:
            rhs = ['%s + 0' % r_ if r_.endswith('.k') or r_.endswith('.v') else r_ for r_ in rhs]
        l = lhs[0] if len(lhs) == 1 else '(%s)' % ', '.join(lhs)
        body = 'SELECT %s FROM %s %s%s' % (', '.join(rhs), ts['name'], sa,
                                           (' WHERE ' + ' AND '.join(extra)) if extra else '')
        return '%s %sIN (%s)' % (l, 'NOT ' if kind == 'notin' else '', body)

    def scalar_subq(self, q, outer, tout):
        """a correlated scalar subquery over another table, compared in WHERE"""
        rng = self.rng
        ts = rng.choice([t for t in self.w.tables if not t.get('dim')] or self.w.tables)
        sa = 'q%d' % (self.nsub)
        self.nsub += 1
        corr, extra = self.correlation(q, sa, ts, outer, tout)
        agg, cmps = rng.choice([
            ('count(*)', ['= 0', '> 0', '>= 2']),
            ('count(%s.v)' % sa, ['= 0', '> 1']),
            ('sum(%s.v)' % sa, ['> 60', 'IS NULL', '< %s.k2' % outer]),
            ('max(%s.n)' % sa, ['> %s.n' % outer, 'IS NULL', '< 100']),
            ('min(%s.k2)' % sa, ['IS NOT NULL', '= %s.k2' % outer]),
            ('avg(%s.v)' % sa, ['> 40', 'IS NULL']),
        ])
        having = ' HAVING count(*) > 1' if rng.random() < 0.1 else ''
        sub = '(SELECT %s FROM %s %s WHERE %s%s)' % (agg, ts['name'], sa, ' AND '.join(corr + extra), having)
        return sub, '%s %s' % (sub, rng.choice(cmps))

    # -- dimension tables ----------------------------------------------------

    def dconst(self, q, t, c, allow_param=True):
        """a literal for dimension column c"""
        import datetime
        rng = self.rng
        d = self.dom
        if c == 'id':
            lit = str(rng.randrange(-1, t['idmod'] + 1))
        elif c == 'code':
            lit = q_lit(rng.choice('rR') + str(rng.randrange(d.Rr + 1)))
        elif c == 'name':
            lit = rng.choice(TRICKY[:5] + ["'name %d'" % rng.randrange(1, 160)] * 3)
        elif c == 'born':
            lit = "date " + q_lit((datetime.date(2020, 1, 1) + datetime.timedelta(days=rng.randrange(d.Rd + 1))).isoformat())
        elif c == 'span':
            lit = "interval '%d days %d hours'" % (rng.randrange(-20, 60), rng.randrange(24))
        elif c == 'ratio':
            lit = rng.choice(['2.5', '0.3', "'NaN'", "'Infinity'", '10', '1e-300'])
        elif c == 'amt':
            lit = str(rng.randrange(0, 130)) + rng.choice(['', '.5', '.125'])
        elif c == 'ts':
            lit = "timestamptz '2024-%02d-%02d 12:00:00+00'" % (rng.randint(3, 5), rng.randint(1, 28))
        else:
            raise ValueError(c)
        if allow_param and q.prep and rng.random() < 0.6:
            q.params.append(lit)
            return '{P%d}' % (len(q.params) - 1)
        return lit

    def dim_filt(self, q, a, t):
        rng = self.rng
        c = rng.choice(['id', 'id', 'code', 'name', 'born', 'span', 'ratio', 'amt', 'ts'])
        e = '%s.%s' % (a, c)
        x = rng.random()
        if x < 0.3:
            return '%s = %s' % (e, self.dconst(q, t, c))
        if x < 0.42:
            return '%s IN (%s)' % (e, ', '.join(self.dconst(q, t, c) for _ in range(rng.randint(1, 4))))
        if x < 0.57:
            return '%s %s %s' % (e, rng.choice(['<', '<=', '>', '>=', '<>']), self.dconst(q, t, c))
        if x < 0.65:
            return '%s IS %sNULL' % (e, rng.choice(['', 'NOT ']))
        if x < 0.92:
            return rng.choice([
                "'x1' = ANY(%s.tags)", "%s.tags @> ARRAY['t5']", "cardinality(%s.nums) > 1", "%s.flag",
                "NOT %s.flag", "%s.flag IS NOT TRUE", "%s.name LIKE 'name 1%%'", "length(%s.name) > 8",
                "%s.id %% 3 = 1", "%s.blob IS NOT NULL", "octet_length(%s.blob) > 2", "%s.ratio = 'NaN'",
                "isfinite(%s.born)", "%s.span > interval '3 days'", "%s.code LIKE 'r1%%'",
                "%s.name ~ E'[\\t\\n\\\\\\\\]'", "%s.ts > timestamptz '2024-03-20 00:00:00+00'"]).replace('%%', '%').replace('%s', a)
        # conditions whose value depends on the session's settings
        return rng.choice([
            "%s.born::text LIKE '2020%%'", "to_char(%s.ts, 'HH24') < '12'", "%s.ts::date > date '2024-03-20'",
            "%s.span::text LIKE '%%mon%%'", "%s.ratio::text LIKE '%%.1%%'"]).replace('%%', '%').replace('%s', a)

    def dim_colref(self, a, t):
        return self.rng.choice([
            '%s.name', '%s.code', '%s.born', '%s.span', '%s.flag', '%s.tags', '%s.id', '%s.id', '%s.ratio',
            '%s.amt', '%s.nums', '%s.blob', "date_trunc('month', %s.ts)", '%s.born::text',
            'extract(year from %s.born)']).replace('%s', a)

    def dim_select(self, a):
        rng = self.rng
        if rng.random() < 0.65:
            return '%s.%s' % (a, rng.choice(DCOLS))
        return rng.choice([
            "coalesce(%s.name, '<none>')", "%s.span + interval '1 day'", "%s.born + 1", "%s.ratio + 0.5",
            "%s.tags[1]", "array_length(%s.nums, 1)", "%s.amt * 2", "length(%s.name)", "upper(%s.code)",
            "%s.id IS NULL", "%s.ts::date", "to_char(%s.born, 'DD Mon YYYY')", "%s.span::text",
            "extract(epoch from %s.span)", "%s.ts AT TIME ZONE 'UTC'", "justify_interval(%s.span)",
            "%s.ratio::text", "%s.blob::text"]).replace('%s', a)

    def dim_agg(self, a):
        return self.rng.choice([
            'count(*)', 'count(%s.name)', 'count(DISTINCT %s.code)', 'min(%s.born)', 'max(%s.span)',
            'sum(%s.amt)', 'avg(%s.amt)', 'max(%s.ratio)', 'min(%s.ratio)', 'count(DISTINCT %s.ratio)',
            "string_agg(%s.name, '|' ORDER BY %s.name)", 'array_agg(%s.id ORDER BY %s.id)',
            'bool_and(%s.flag)', 'count(DISTINCT %s.tags)', 'sum(%s.id)', 'max(%s.ts)', 'sum(%s.span)',
            'avg(%s.span)', 'min(%s.blob::text)', 'max(%s.code)', 'count(*) FILTER (WHERE %s.flag)',
            'array_agg(DISTINCT %s.id)']).replace('%s', a)

    def tcmp(self, ea, ca, eb, cb):
        return '%s = %s%s' % (ea, eb, ' COLLATE "C"' if ca != cb else '')

    def dim_pair(self, da, d, sa, t):
        """an equality of dimension d (alias da) and sharded or dimension t (alias sa)"""
        rng = self.rng
        r = rng.random()
        if t.get('dim'):
            if r < 0.6:
                return '%s.id = %s.id' % (sa, da)
            if r < 0.8:
                return self.tcmp('%s.code' % sa, t['ccoll'], '%s.code' % da, d['ccoll'])
            return rng.choice(['%s.born = %s.born', '%s.tags = %s.tags', '%s.span = %s.span']) % (sa, da)
        if r < 0.55:
            c = '%s.%s' % (sa, d['ref'])
        elif r < 0.7:
            c = '%s.%s' % (sa, rng.choice(['k', 'k2', 'v']))
        elif r < 0.87:
            e = ('lower(%s.r)' if rng.random() < 0.3 else '%s.r') % sa
            return self.tcmp(e, t['rcoll'], '%s.code' % da, d['ccoll']) if rng.random() < 0.5 else \
                self.tcmp('%s.code' % da, d['ccoll'], e, t['rcoll'])
        else:
            return '%s.d = %s.born' % (sa, da)
        return ('%s = %s.id' % (c, da)) if rng.random() < 0.6 else ('%s.id = %s' % (da, c))

    def dim_joincond(self, q, x, tx, y, ty, full=False):
        """conditions joining x and y, one of them (or both) a dimension;
        returns (conditions, whether they are no equality)"""
        rng = self.rng
        if tx.get('dim'):
            da, d, sa, t = x, tx, y, ty
        else:
            da, d, sa, t = y, ty, x, tx
        conds = [self.dim_pair(da, d, sa, t)]
        nonequi = False
        if not full and self.on('nonequi', 0.2):
            nonequi = True
            if t.get('dim'):
                conds = [rng.choice(['%s.id < %s.id', '%s.born <> %s.born']) % (sa, da)]
            else:
                conds = [rng.choice(['%(s)s.v < %(d)s.id', '%(s)s.k BETWEEN %(d)s.id AND %(d)s.id + 2',
                                     '(%(s)s.k = %(d)s.id OR %(s)s.v = %(d)s.id)', '%(s)s.d >= %(d)s.born',
                                     '%(s)s.n > %(d)s.amt']) % {'s': sa, 'd': da}]
        if not full and rng.random() < 0.3:
            conds.append(self.dim_filt(q, da, d))
        if not full and rng.random() < 0.08:
            conds.append(self.dim_pair(da, d, sa, t))
        return conds, nonequi

    def dim_fanout(self, d, nonequi):
        n = max(1, d['N'] + (d['child'] or 0))
        if nonequi:
            return n
        return max(1.0, n / max(1, min(d['idmod'], self.dom.Rr, self.dom.Rd)))

    def dim_subq(self, q, outer, tout, sharded_inside=False):
        """EXISTS / IN / NOT EXISTS / NOT IN: over a dimension, or with a
        dimension outside (sharded_inside) over a sharded table"""
        rng = self.rng
        sa = 'q%d' % self.nsub
        self.nsub += 1
        kinds = (['exists', 'in'] if 'semi' in self.f else []) + (['notexists', 'notin'] if 'anti' in self.f else [])
        kind = rng.choice(kinds or ['exists'])
        if tout.get('dim') or sharded_inside:
            ts = rng.choice(self.w.tables)
            c = rng.choice([tout['ref'] if tout.get('dim') else 'k', 'k', 'k2', 'v'])
            extra = [self.filt(q, sa, ts)] if rng.random() < 0.4 else []
            if kind in ('exists', 'notexists'):
                s = 'EXISTS (SELECT 1 FROM %s %s WHERE %s)' % (
                    ts['name'], sa, ' AND '.join(['%s.%s = %s.id' % (sa, c, outer)] + extra))
                return ('NOT ' + s) if kind == 'notexists' else s
            return '%s.id %sIN (SELECT %s.%s FROM %s %s%s)' % (
                outer, 'NOT ' if kind == 'notin' else '', sa, c, ts['name'], sa,
                (' WHERE ' + ' AND '.join(extra)) if extra else '')
        d = rng.choice(self.w.dims)
        q.has_dim = True
        q.dim_aliases.append(sa)
        extra = [self.dim_filt(q, sa, d)] if rng.random() < 0.5 else []
        if kind in ('exists', 'notexists'):
            s = 'EXISTS (SELECT 1 FROM %s %s WHERE %s)' % (
                d['name'], sa, ' AND '.join([self.dim_pair(sa, d, outer, tout)] + extra))
            return ('NOT ' + s) if kind == 'notexists' else s
        c = rng.choice([d['ref'], 'k', 'k2', 'v'])
        return '%s.%s %sIN (SELECT %s.id FROM %s %s%s)' % (
            outer, c, 'NOT ' if kind == 'notin' else '', sa, d['name'], sa,
            (' WHERE ' + ' AND '.join(extra)) if extra else '')

    def add_dims(self, q, est):
        """join one to three dimension tables into q (built over sharded
        tables); True when q is complete"""
        rng = self.rng
        dims = self.w.dims
        q.has_dim = True
        # fewer sharded tables: dimension queries are about the dimensions
        while len(q.items) > 1 and rng.random() < (0.8 if len(q.items) > 2 else 0.3):
            drop_alias(q, q.items[-1]['alias'])
            q.select = []
        num = max(int(it['alias'][1:]) for it in q.items)
        if 'cross' in self.f and rng.random() < 0.06:
            # SELECT count(*) FROM x CROSS JOIN dim: no column of either needed
            t = rng.choice(self.w.tables)
            d = rng.choice(dims)
            q.items = [{'alias': 'a1', 'table': t, 'jt': None, 'on': [], 'anti': False},
                       {'alias': 'a2', 'table': d, 'jt': rng.choice(['CROSS', 'COMMA']), 'on': [], 'anti': False}]
            q.where = [self.dim_filt(q, 'a2', d)] if rng.random() < 0.5 else []
            q.agg = True
            q.aggs = ['count(*)']
            return True
        for j in range(rng.choice([1, 1, 1, 1, 2, 2, 3])):
            d = rng.choice(dims)
            num += 1
            x = 'a%d' % num
            item = {'alias': x, 'table': d, 'jt': None, 'on': [], 'anti': False}
            mode = rng.random()
            if mode < 0.18 and j == 0 and q.items[0]['jt'] is None:
                # the dimension first: FROM dim ... JOIN sharded
                old = q.items[0]
                jt = rng.choice(['INNER', 'LEFT', 'LEFT', 'RIGHT', 'FULL'] if 'outer' in self.f else ['INNER'])
                conds, ne = self.dim_joincond(q, old['alias'], old['table'], x, d, full=(jt == 'FULL'))
                if est * self.dim_fanout(d, ne) > 300000:
                    continue
                est *= self.dim_fanout(d, ne)
                old['jt'], old['on'] = jt, conds
                q.items.insert(0, item)
                q.dim_aliases.append(x)
            elif mode < 0.33 and ('semi' in self.f or 'anti' in self.f):
                it = rng.choice([it for it in q.items if not it['table'].get('dim')])
                q.where.append(self.dim_subq(q, it['alias'], it['table']))
                num -= 1
                continue
            else:
                prev = rng.choice(q.items)
                jts = ['INNER'] * 4
                if 'outer' in self.f:
                    jts += ['LEFT', 'LEFT', 'RIGHT', 'FULL']
                if 'cross' in self.f and est * self.dim_fanout(d, True) <= 20000:
                    jts += ['CROSS', 'COMMA']
                if 'anti' in self.f:
                    jts += ['ANTI']
                jt = rng.choice(jts)
                if jt in ('CROSS', 'COMMA'):
                    est *= self.dim_fanout(d, True)
                    item['jt'] = jt
                    if rng.random() < 0.5:
                        q.where += self.dim_joincond(q, x, d, prev['alias'], prev['table'])[0]
                else:
                    conds, ne = self.dim_joincond(q, x, d, prev['alias'], prev['table'], full=(jt == 'FULL'))
                    if est * self.dim_fanout(d, ne) > 300000:
                        conds, ne = [self.dim_pair(x, d, prev['alias'], prev['table'])], False
                    est *= self.dim_fanout(d, ne)
                    item['on'] = conds
                    item['jt'] = jt
                    if jt == 'ANTI':
                        item['jt'] = 'LEFT'
                        item['anti'] = True
                        m = re.search(r'(%s\.\w+)' % x, conds[0])
                        q.where.append('%s IS NULL' % (m.group(1) if m else '%s.id' % x))
                q.items.append(item)
                q.dim_aliases.append(x)
            if rng.random() < 0.3 and not item['anti']:
                q.dgroup.append(self.dim_colref(x, d))
        return False

    def finish(self, q):
        """session settings for both sides, and maybe a BroadcastJoin hint"""
        rng = self.drng
        if 'session-settings' in self.f and rng.random() < (0.4 if q.has_dim else 0.08):
            opts = [('DateStyle', rng.choice(['SQL, DMY', 'German', 'Postgres, MDY', 'ISO, YMD', 'SQL, MDY'])),
                    ('IntervalStyle', rng.choice(['sql_standard', 'iso_8601', 'postgres_verbose'])),
                    ('extra_float_digits', rng.choice(['-2', '-15', '0', '1'])),
                    ('TimeZone', rng.choice(['Asia/Kolkata', 'America/St_Johns', 'Pacific/Chatham',
                                             'Australia/Lord_Howe', 'Europe/Lisbon', 'UTC'])),
                    ('bytea_output', 'escape')]
            q.sess = rng.sample(opts, rng.randint(1, 3))
        if q.has_dim and q.dim_aliases and 'hints' in self.f and rng.random() < 0.3:
            ok = []
            for n, it in enumerate(q.items):
                if not it['table'].get('dim'):
                    continue
                if n > 0 and it['jt'] in ('INNER', 'LEFT', 'CROSS', 'COMMA'):
                    ok.append(it['alias'])
                elif n == 0 and len(q.items) > 1 and q.items[1]['jt'] in ('INNER', 'RIGHT'):
                    ok.append(it['alias'])
            if ok and rng.random() < 0.85:
                al = rng.choice(ok)
            else:
                al = rng.choice(q.dim_aliases)      # maybe one that cannot be honoured
            q.hint = (al, rng.choice(['lead', 'lead', 'select']))
        # PreAggregate(alias) on aggregating joins: mostly the one table the
        # aggregates read (the hint can hold), else any (a refusal is fine)
        prng = self.prng
        if 'hints' in self.f and q.agg and len(q.items) > 1 and prng.random() < 0.2:
            aliases = [it['alias'] for it in q.items]
            read = set(AL.findall(' '.join(q.aggs))) & set(aliases)
            if len(read) == 1 and prng.random() < 0.8:
                q.phint = read.pop()
            else:
                q.phint = prng.choice(aliases)

    def gen_dual(self, q):
        """two sharded tables joined on columns that are no partition key of
        either: both sides repartitioned by the hash of the join column, or
        one broadcast where that moves fewer rows; with Redistribute(a1 a2)
        at times.  No parameters: a moved side's conditions cannot carry
        them, and the hint must hold."""
        rng = self.rng
        tabs = self.w.tables
        a, b = rng.choice(tabs), rng.choice(tabs)
        fam = rng.choice(['int', 'int', 'text', 'num', 'uuid', 'date'])
        ca = rng.choice([c for c in COLS if FAMILY[c] == fam])
        cb = rng.choice([c for c in COLS if FAMILY[c] == fam])
        cond = [self.eq('a1.%s' % ca, a, ca, 'a2.%s' % cb, b, cb)]
        jt = rng.choice(['INNER', 'INNER', 'LEFT', 'RIGHT', 'FULL', 'SEMI', 'ANTI'])
        if jt != 'FULL' and rng.random() < 0.3:
            cond.append('a1.v %s a2.v' % rng.choice(['<', '<>', '>=']))
        q.items.append({'alias': 'a1', 'table': a, 'jt': None, 'on': [], 'anti': False})
        if jt in ('SEMI', 'ANTI'):
            q.where.append('%sEXISTS (SELECT FROM %s a2 WHERE %s)' % (
                'NOT ' if jt == 'ANTI' else '', b['name'], ' AND '.join(cond)))
            visible = ['a1']
        else:
            q.items.append({'alias': 'a2', 'table': b, 'jt': jt, 'on': cond, 'anti': False})
            visible = ['a1', 'a2']
        if rng.random() < 0.4:
            q.where.append('%s.v > %d' % (rng.choice(visible), rng.randint(0, 80)))
        if rng.random() < 0.4:
            q.gucs = [rng.choice([('colojoin.enable_broadcast', 'off'),
                                  ('colojoin.enable_broadcast', 'off'),
                                  ('colojoin.enable_dual_repartition', 'off'),
                                  ('colojoin.max_connections_per_node', '1')])]
        # date hashes with int4's function, which a node cannot call on it
        if fam != 'date' and rng.random() < 0.4:
            q.dhint = ('a1', 'a2')
        if a['N'] * self.fanout(b) > 100000 or rng.random() < 0.5:
            q.agg = True
            if rng.random() < 0.5:
                q.group.append('%s.%s' % (rng.choice(visible), rng.choice(COLS)))
            q.aggs = ['count(*)'] + ['count(%s.%s)' % (al, rng.choice(COLS)) for al in visible] + \
                ['sum(a1.v)']
            if rng.random() < 0.5:
                # one table's aggregates: it may be grouped before its move
                x = rng.choice(visible)
                q.aggs = ['count(*)', 'count(%s.k2)' % x, 'sum(%s.v)' % x, 'min(%s.n)' % x,
                          'max(%s.v)' % x, 'avg(%s.n)' % x]
        else:
            q.select = ['%s.%s' % (rng.choice(visible), rng.choice(COLS))
                        for _ in range(rng.randint(1, 3))]
        return q

    def gen(self):
        # every stream of a shape draws once per query, so that a shape
        # taking a query changes no other shape's queries
        draws = [(f, r, share, fn, r.random()) for f, r, share, fn in self.shapes]
        for f, r, share, fn, x in draws:
            if f in self.f and x < share:
                saved, self.rng = self.rng, r
                self.nsub = 1
                try:
                    return fn(Query())
                finally:
                    self.rng = saved
        if 'moved-joins' in self.f and self.mrng.random() < self.moved_share:
            saved, self.rng = self.rng, self.mrng
            self.moved = True
            try:
                return self.gen_query()
            finally:
                self.rng = saved
                self.moved = False
        return self.gen_query()

    def moved_cond(self, q, x, tx, y, ty, jt, est):
        """(conditions, fanout) joining new alias x to y for a moved join:
        the keys (a colocated step), other columns equal (a move by
        repartition or broadcast), or no equality at all (only a broadcast
        can do it)"""
        rng = self.rng
        r = rng.random()
        if jt == 'FULL':
            r *= 0.5
        if r < 0.3:
            return self.keyeq(x, tx, y, ty), self.fanout(tx)
        if r < 0.5:
            c = rng.choice(['v', 'k2', 'k', 'n'])
            c2 = rng.choice([cc for cc in ('v', 'k2', 'k', 'n') if FAMILY[cc] == FAMILY[c]])
            return ['%s.%s = %s.%s' % (x, c, y, c2)], self.fanout(tx)
        # no equality: every row of x may meet every row of y
        if est * max(1, tx['N']) > 40000:
            return ['%s.v = %s.v' % (x, y)], self.fanout(tx)
        if r < 0.62:
            conds = ['%s.v %s %s.v' % (x, rng.choice(['<', '<=', '>', '<>']), y)]
        elif r < 0.74:
            conds = ['%s.v BETWEEN %s.v - %d AND %s.n' % (x, y, rng.randrange(1, 20), y)]
        elif r < 0.82:
            conds = ['%s.k2 %s %s.v + %d' % (x, rng.choice(['<', '>=']), y, rng.randrange(0, 50))]
        elif r < 0.9:
            conds = ['(%s.v < %s.v OR %s.k2 = %s.k2)' % (x, y, x, y)]
        else:
            conds = []          # ON true
        return conds, max(1.0, tx['N'] / 3.0)

    def gen_query(self):
        rng = self.rng
        q = Query()
        self.nsub = 1
        if self.moved and 'settings' in self.f and rng.random() < 0.3:
            # too large to broadcast: a move by a key, or PostgreSQL
            q.gucs.append(('colojoin.broadcast_threshold', rng.choice(['0', '10'])))
        if 'dual-repartition' in self.f and self.xrng.random() < self.dual_share:
            saved, self.rng = self.rng, self.xrng
            try:
                return self.gen_dual(q)
            finally:
                self.rng = saved
        if self.on('prepared', 0.2):
            q.prep = rng.choice(['force_custom_plan', 'force_generic_plan'])
        if self.on('settings', 0.25):
            opts = [('colojoin.max_connections_per_node', str(rng.choice([1, 2, 3, 8]))),
                    ('colojoin.enable_broadcast', 'off'), ('colojoin.enable_redistribution', 'off'),
                    ('colojoin.broadcast_threshold', str(rng.choice([0, 10, 100]))),
                    ('colojoin.enable_aggregate_pushdown', 'off'), ('colojoin.binary_results', 'off'),
                    ('enable_hashjoin', 'off'), ('enable_partitionwise_join', 'on'),
                    ('enable_partitionwise_aggregate', 'on')]
            q.gucs = q.gucs + rng.sample(opts, rng.randint(1, 2))
        tabs = self.w.tables
        if self.on('no-column-moves', 0.05) and 'cross' in self.f:
            # SELECT count(*) FROM x CROSS JOIN y: no column of either is needed
            cands = [t for t in tabs if self.small(t)]
            if len(cands) >= 1:
                a, b = rng.choice(cands), rng.choice(cands)
                q.items = [{'alias': 'a1', 'table': a, 'jt': None, 'on': [], 'anti': False},
                           {'alias': 'a2', 'table': b, 'jt': 'CROSS', 'on': [], 'anti': False}]
                if rng.random() < 0.5:
                    q.where.append(self.filt(q, 'a%d' % rng.randint(1, 2), rng.choice([a, b])))
                q.agg = True
                q.aggs = ['count(*)']
                return q
        n = rng.choice([1, 2, 2, 2, 3, 3, 4])
        first = rng.choice(tabs)
        est = max(1, first['N'])
        q.items.append({'alias': 'a1', 'table': first, 'jt': None, 'on': [], 'anti': False})
        fam = first['family']
        for i in range(2, n + 1):
            for _try in range(8):
                if rng.random() < 0.75:
                    t = rng.choice([t for t in tabs if t['family'] == fam])
                else:
                    t = rng.choice(tabs)
                if est * self.fanout(t) <= 300000:
                    break
            else:
                break
            est *= self.fanout(t)
            x = 'a%d' % i
            jts = ['INNER'] * 4
            if 'outer' in self.f:
                jts += ['LEFT', 'LEFT', 'RIGHT', 'FULL']
            if 'cross' in self.f and all(self.small(it['table'], 150) for it in q.items) and self.small(t, 150):
                jts += ['CROSS', 'COMMA']
            if 'anti' in self.f:
                jts += ['ANTI']
            jt = rng.choice(jts)
            prev = rng.choice(q.items)
            item = {'alias': x, 'table': t, 'jt': jt, 'on': [], 'anti': False}
            if self.moved:
                if jt in ('CROSS', 'COMMA') and est * max(1, t['N']) > 40000:
                    jt = 'INNER'
                if jt in ('CROSS', 'COMMA'):
                    item['jt'] = jt
                    q.items.append(item)
                    est *= max(1, t['N'])
                    continue
                conds, f = self.moved_cond(q, x, t, prev['alias'], prev['table'], jt, est)
                others = [it for it in q.items if it is not prev and not it['anti']]
                if others and rng.random() < 0.3:
                    # a condition on a second table: x joins only above both
                    conds.append('%s.v <> %s.v' % (x, rng.choice(others)['alias']))
                if jt == 'FULL' and not any('=' in c and '<' not in c and '>' not in c for c in conds):
                    jt = 'LEFT'
                est = est / self.fanout(t) * f
                item['jt'] = 'LEFT' if jt == 'ANTI' else jt
                item['on'] = conds
                if jt == 'ANTI':
                    item['anti'] = True
                    q.where.append('%s.k IS NULL' % x)
                q.items.append(item)
                continue
            if jt in ('CROSS', 'COMMA'):
                item['jt'] = 'CROSS' if jt == 'CROSS' else 'COMMA'
                if rng.random() < 0.7:
                    q.where += self.joincond(q, x, t, prev['alias'], prev['table'])
            else:
                item['on'] = self.joincond(q, x, t, prev['alias'], prev['table'], full=(jt == 'FULL'))
                if jt == 'ANTI':
                    item['jt'] = 'LEFT'
                    item['anti'] = True
                    m = re.match(r'\(?(%s\.\w+)' % x, item['on'][0]) or re.search(r'(%s\.\w+)' % x, item['on'][0])
                    col = m.group(1) if m else '%s.k' % x
                    q.where.append('%s IS NULL' % col)
                elif jt == 'LEFT' and self.on('semi-under-outer', 0.3) and 'semi' in self.f:
                    item['on'].append(self.subq(q, x, t))
            q.items.append(item)
        if not self.moved and self.w.dims and 'dimensions' in self.f and self.drng.random() < self.dim_share:
            saved, self.rng = self.rng, self.drng
            try:
                if self.add_dims(q, est):
                    self.finish(q)
                    return q
            finally:
                self.rng = saved
            rng = self.rng
        # filters
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            it = rng.choice(q.items)
            q.where.append(self.filt(q, it['alias'], it['table']))
        if ('semi' in self.f or 'anti' in self.f) and rng.random() < 0.3:
            it = rng.choice(q.items)
            q.where.append(self.subq(q, it['alias'], it['table']))
        if 'scalar-subqueries' in self.f and self.srng.random() < self.scalar_share:
            saved, self.rng = self.rng, self.srng
            try:
                it = self.rng.choice([it for it in q.items if not it['table'].get('dim')] or q.items)
                sub, cond = self.scalar_subq(q, it['alias'], it['table'])
                # in the select list (of a query that does not aggregate) or WHERE
                if self.rng.random() < 0.3:
                    q.scalar_sel = sub
                else:
                    q.where.append(cond)
            finally:
                self.rng = saved
        if 'coordinator-rows' in self.f and self.crng.random() < self.coord_share:
            its = [it for it in q.items if not it['table'].get('dim')]
            if its:
                q.where.append(self.coordinator_rows_pred(self.crng.choice(its)['alias']))
        if not self.moved and 'windows' in self.f and self.wrng.random() < self.win_share:
            saved, self.rng = self.rng, self.wrng
            try:
                self.add_windows(q)
            finally:
                self.rng = saved
            if 'anti-cols' not in self.f:
                self.scrub_anti(q)
            self.finish(q)
            return q
        # output
        visible = [it for it in q.items if not it['anti'] or self.on('anti-cols', 0.5)]
        if q.dgroup or self.on('aggregates', 0.4):
            q.agg = True
            q.group += q.dgroup
            for _ in range(rng.choice([0, 1, 1, 2])):
                it = rng.choice(visible)
                e, _c = self.colref(it['alias'], it['table'])
                q.group.append(e)
            # a moved join's aggregates over one table at times (grouped
            # before its move: PreAggregate)
            one = rng.choice(visible) if self.moved and rng.random() < 0.5 else None
            for _ in range(rng.randint(1, 3)):
                it = one or rng.choice(visible)
                a = it['alias']
                if it['table'].get('dim'):
                    q.aggs.append(self.dim_agg(a))
                    continue
                c = rng.choice(COLS)
                q.aggs.append(rng.choice([
                    'count(*)', 'count(%s.%s)' % (a, c), 'count(DISTINCT %s.%s)' % (a, c),
                    'sum(%s.v)' % a, 'sum(%s.k)' % a, 'sum(%s.n)' % a, 'min(%s.%s)' % (a, rng.choice(['k', 'r', 'd', 's'])),
                    'max(%s.%s)' % (a, rng.choice(['k', 'k2', 'r', 'd', 'n'])), 'avg(%s.v)' % a,
                    'avg(%s.k)' % a, 'bool_or(%s.v > 50)' % a,
                    "string_agg(%s.s, ',' ORDER BY %s.s)" % (a, a),
                    'array_agg(DISTINCT %s.k2 ORDER BY %s.k2)' % (a, a),
                    'sum(DISTINCT %s.v)' % a, 'stddev_samp(%s.v)' % a,
                    'count(*) FILTER (WHERE %s.v > 30)' % a]))
            if q.group and rng.random() < 0.3:
                it = rng.choice(visible)
                a = it['alias']
                if it['table'].get('dim'):
                    q.having.append(rng.choice(['count(*) > 1', 'count(%s.name) >= 1' % a,
                                                "max(%s.span) > interval '2 days'" % a]))
                else:
                    q.having.append(rng.choice(['count(*) > 1', 'sum(%s.v) > 100' % a,
                                                'min(%s.k) IS NOT NULL' % a, 'count(DISTINCT %s.k2) >= 2' % a]))
        else:
            for _ in range(rng.randint(1, 4)):
                it = rng.choice(visible)
                a = it['alias']
                x = rng.random()
                if x < 0.12 and 'whole-row' in self.f:
                    q.select.append(a)
                elif x < 0.2 and 'whole-row' in self.f:
                    q.select.append('%s::text' % a)
                elif it['table'].get('dim'):
                    q.select.append(self.dim_select(a))
                elif x < 0.3:
                    q.select.append(rng.choice(['%s.k + %s.v' % (a, a), "coalesce(%s.r, 'none')" % a,
                                                "CASE WHEN %s.v > 50 THEN 'hi' ELSE 'lo' END" % a,
                                                '%s.k IS NULL' % a]))
                else:
                    q.select.append('%s.%s' % (a, rng.choice(COLS)))
            q.distinct = self.on('distinct', 0.15)
        if self.on('limit', 0.25):
            q.order = True
            q.limit = rng.choice([1, 3, 10, 50])
            if rng.random() < 0.2:
                q.offset = rng.choice([1, 5])
        elif rng.random() < 0.1:
            q.order = True
        if 'anti-cols' not in self.f:
            self.scrub_anti(q)
        if 'lateral' in self.f and self.lrng.random() < self.lat_share:
            saved, self.rng = self.rng, self.lrng
            try:
                self.add_lateral(q, est)
            finally:
                self.rng = saved
        self.finish(q)
        return q

    # -- LATERAL subqueries --------------------------------------------------

    def add_lateral(self, q, est):
        """a LATERAL subquery over a table, correlated with an item of q
        (mostly on the partition key), as the query's last FROM item.  Only
        over few rows: where colojoin declines, PostgreSQL runs the
        subquery once per row, a round trip to every node each time."""
        rng = self.rng
        if est > 300 or any(it['table'].get('dim') for it in q.items):
            return
        cands = [it for it in q.items if not it['anti']]
        if not cands:
            return
        prev = rng.choice(cands)
        pt = prev['table']
        same = [t for t in self.w.tables if t['family'] == pt['family']]
        ts = rng.choice(same if same and rng.random() < 0.8 else self.w.tables)
        la = 'q%d' % self.nsub
        self.nsub += 1
        if rng.random() < 0.75:
            where = self.keyeq(la, ts, prev['alias'], pt)
        else:
            c = rng.choice(['k', 'k2', 'v', 'd'])
            where = [self.eq('%s.%s' % (la, c), ts, c, '%s.%s' % (prev['alias'], c), pt, c)]
        if rng.random() < 0.4:
            where.append(self.filt(q, la, ts))
        if rng.random() < 0.3:
            where.append('%s.v %s %s.v' % (la, rng.choice(['<=', '>', '<>']), prev['alias']))
        shape = rng.choice(['limit', 'limit', 'limit', 'agg', 'group', 'distinct'])
        body = ' FROM %s %s WHERE %s' % (ts['name'], la, ' AND '.join(where))
        if shape == 'limit':
            cols = rng.sample(COLS, rng.randint(1, 2))
            order = ['%s %s' % (e, rng.choice(['ASC', 'DESC', 'DESC NULLS LAST', 'ASC NULLS FIRST']))
                     for e in self.total_order([{'alias': la, 'table': ts}])]
            rng.shuffle(order)
            sql = 'SELECT %s%s ORDER BY %s LIMIT %d' % (
                ', '.join('%s.%s AS c%d' % (la, c, i + 1) for i, c in enumerate(cols)), body,
                ', '.join(order), rng.choice([1, 1, 2, 3]))
            if rng.random() < 0.15:
                sql += ' OFFSET 1'
            ncols = len(cols)
        elif shape == 'agg':
            sql = 'SELECT count(*) AS c1, max(%s.v) AS c2, min(%s.d) AS c3, sum(%s.n) AS c4%s' % (la, la, la, body)
            ncols = 4
        elif shape == 'group':
            c = rng.choice(['k2', 'v', 'd', 'r'])
            sql = 'SELECT %s.%s AS c1, count(*) AS c2%s GROUP BY 1' % (la, c, body)
            if rng.random() < 0.3:
                sql += ' HAVING count(*) > 1'
            if rng.random() < 0.5:
                sql += ' ORDER BY 2 DESC, 1 LIMIT %d' % rng.choice([1, 2])
            ncols = 2
        else:
            cols = rng.sample(['k2', 'v', 'd', 'r'], rng.randint(1, 2))
            sql = 'SELECT DISTINCT %s%s' % (', '.join('%s.%s AS c%d' % (la, c, i + 1) for i, c in enumerate(cols)),
                                            body)
            ncols = len(cols)
        alias = 'a%d' % (len(q.items) + 1)
        jt = rng.choice(['LEFT', 'LEFT', 'CROSS', 'INNER'])
        on = []
        if jt != 'CROSS' and rng.random() < 0.3:
            on = ['%s.c1 IS NOT NULL' % alias]
        q.items.append({'alias': alias, 'table': ts, 'jt': jt, 'on': on, 'anti': False, 'lateral': sql})
        if q.agg:
            q.aggs.append('count(%s.c%d)' % (alias, rng.randint(1, ncols)))
        else:
            q.select.append('%s.c%d' % (alias, rng.randint(1, ncols)))

    # -- window functions ----------------------------------------------------

    def total_order(self, items):
        """every column of items: a total order up to rows that nothing
        in the output tells apart"""
        out = []
        for it in items:
            a = it['alias']
            if it['table'].get('dim'):
                out += [x % a for x in ('%s.id', '%s.code COLLATE "C"', '%s.name COLLATE "C"', '%s.born',
                                        '%s.span::text COLLATE "C"', '%s.ratio::text COLLATE "C"',
                                        '%s.amt::text COLLATE "C"', '%s.tags::text COLLATE "C"', '%s.nums',
                                        '%s.ts', '%s.flag', '%s.blob')]
            else:
                out += [x % a for x in ('%s.k', '%s.k2', '%s.r COLLATE "C"', '%s.d', '%s.u', '%s.v',
                                        '%s.s COLLATE "C"', '%s.n')]
        return out

    def add_windows(self, q):
        """select window functions over q's join tree"""
        rng = self.rng
        visible = [it for it in q.items if not it['anti'] or self.on('anti-cols', 0.5)]
        sharded = [it for it in visible if not it['table'].get('dim')]
        for _ in range(rng.randint(0, 3)):
            it = rng.choice(visible)
            a = it['alias']
            q.select.append(self.dim_select(a) if it['table'].get('dim') else '%s.%s' % (a, rng.choice(COLS)))

        def partition():
            x = rng.random()
            if sharded and x < 0.75:
                it = rng.choice(sharded)
                a = it['alias']
                keys = it['scheme_keys'] if 'scheme_keys' in it else it['table']['scheme']['keys']
                if rng.random() < 0.85:
                    p = [k['tmpl'].format(a=a) for k in keys]
                else:
                    p = [k['tmpl'].format(a=a) for k in keys[:1]]
                if any(k['expr'] for k in keys) and rng.random() < 0.3:
                    p = ['%s.%s' % (a, c) for k in keys for c in k['cols']]
                if rng.random() < 0.3:
                    o = rng.choice(visible)
                    p.append('%s.%s' % (o['alias'], rng.choice(COLS)) if not o['table'].get('dim')
                             else '%s.id' % o['alias'])
                return p
            if x < 0.9:
                o = rng.choice(visible)
                return ['%s.%s' % (o['alias'], rng.choice(['v', 'k2', 's'])) if not o['table'].get('dim')
                        else '%s.code' % o['alias']]
            return []
        tot = self.total_order(visible)
        nwin = rng.choice([1, 1, 1, 2, 2, 3])
        named = {}
        for i in range(nwin):
            a = rng.choice(sharded)['alias'] if sharded else None
            part = partition()
            pc = ('PARTITION BY ' + ', '.join(part)) if part else ''
            kind = rng.random()
            if kind < 0.35 or not a:
                # order-dependent: a total order
                order = tot[:]
                if rng.random() < 0.5 and a:
                    order.insert(0, '%s.%s' % (a, rng.choice(['v', 'd', 'n'])) + rng.choice(['', ' DESC', ' NULLS FIRST']))
                spec = (pc + ' ORDER BY ' + ', '.join(order)).strip()
                fn = rng.choice(['row_number()', 'rank()', 'ntile(%d)' % rng.randint(1, 4),
                                 'lag(%s.v)' % a if a else 'row_number()',
                                 rng.choice(['lag(%s.v, %d, -1)', 'lag(%s.k, %d)']) % (a, rng.randint(1, 3)) if a else 'count(*)',
                                 'lead(%s.s, %d)' % (a, rng.randint(1, 2)) if a else 'rank()',
                                 'first_value(%s.v)' % a if a else 'rank()',
                                 'last_value(%s.r)' % a if a else 'rank()',
                                 'nth_value(%s.v, %d)' % (a, rng.randint(1, 3)) if a else 'rank()',
                                 'sum(%s.v)' % a if a else 'count(*)', 'count(*)'])
                if rng.random() < 0.4:
                    spec += ' ' + rng.choice(['ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING',
                                              'ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW',
                                              'ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING',
                                              'ROWS 2 PRECEDING', 'ROWS BETWEEN 2 PRECEDING AND 1 PRECEDING',
                                              'ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING '
                                              'EXCLUDE CURRENT ROW'])
            elif kind < 0.65:
                # deterministic with ties: ranks over a partial order
                o = rng.choice(visible)
                col = '%s.%s' % (o['alias'], rng.choice(['v', 'd', 'k2', 'r COLLATE "C"'])) \
                    if not o['table'].get('dim') else '%s.id' % o['alias']
                spec = (pc + ' ORDER BY ' + col + rng.choice(['', ' DESC', ' DESC NULLS LAST'])).strip()
                fn = rng.choice(['rank()', 'dense_rank()', 'percent_rank()', 'cume_dist()',
                                 'count(*)', 'sum(%s.v)' % a, 'max(%s.d)' % a, 'avg(%s.n)' % a])
            else:
                # aggregates over RANGE / GROUPS frames (ties are peers)
                m = rng.random()
                if m < 0.5:
                    col, off = '%s.v' % a, str(rng.randint(0, 10))
                elif m < 0.75:
                    col, off = '%s.d' % a, "interval '%d days'" % rng.randint(0, 20)
                else:
                    col, off = '%s.n' % a, '%d.5' % rng.randint(0, 20)
                mode = rng.choice(['RANGE', 'RANGE', 'GROUPS'])
                if mode == 'GROUPS':
                    off = str(rng.randint(0, 3))
                fr = rng.choice(['BETWEEN %s PRECEDING AND %s FOLLOWING' % (off, off),
                                 'BETWEEN UNBOUNDED PRECEDING AND %s FOLLOWING' % off,
                                 '%s PRECEDING' % off, 'BETWEEN CURRENT ROW AND %s FOLLOWING' % off,
                                 'BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW'])
                ex = rng.choice(['', '', '', ' EXCLUDE CURRENT ROW', ' EXCLUDE TIES', ' EXCLUDE GROUP',
                                 ' EXCLUDE NO OTHERS'])
                spec = ('%s ORDER BY %s%s %s %s%s' % (pc, col, rng.choice(['', ' DESC']), mode, fr, ex)).strip()
                fn = rng.choice(['sum(%s.v)' % a, 'count(*)', 'count(%s.k)' % a, 'min(%s.r COLLATE "C")' % a,
                                 'max(%s.n)' % a, 'avg(%s.v)' % a, 'sum(%s.n)' % a])
            if fn.startswith(('sum', 'count', 'min', 'max', 'avg')) and rng.random() < 0.2:
                fn += ' FILTER (WHERE %s.v > %d)' % (a, rng.randint(10, 80))
            if rng.random() < 0.1:
                spec = ''       # over everything
                fn = rng.choice(['count(*)', 'sum(%s.v)' % a if a else 'count(*)'])
            wn = 'w%d' % (len(q.wsel) + 1)
            r = rng.random()
            if r < 0.25:
                name = 'win%d' % (len(q.windows) + 1)
                q.windows.append((name, spec))
                call = '%s OVER %s' % (fn, name)
            elif r < 0.35 and part and ' ORDER BY ' in ' ' + spec and 'PRECEDING' not in spec \
                    and 'FOLLOWING' not in spec and 'ROWS' not in spec:
                name = 'win%d' % (len(q.windows) + 1)
                q.windows.append((name, pc))
                call = '%s OVER (%s %s)' % (fn, name, spec[len(pc):].strip())
            else:
                call = '%s OVER (%s)' % (fn, spec)
            q.wsel.append((wn, call))
            if nwin > 1 and rng.random() < 0.2 and q.windows:
                # the same window twice
                q.wsel.append(('w%d' % (len(q.wsel) + 1), 'count(*) OVER %s' % q.windows[-1][0]))
        if rng.random() < 0.35:
            cands = [w for w, c in q.wsel if re.match(r'(row_number|rank|dense_rank|count\(\*\)) OVER', c)]
            if cands:
                q.wfilter.append('%s %s %d' % (rng.choice(cands), rng.choice(['<=', '<', '=']), rng.randint(1, 3)))
            if rng.random() < 0.3 and q.select:
                q.wfilter.append('c1 IS NOT NULL')

    def scrub_anti(self, q):
        """without anti-cols: no column of an anti-joined side (a nullable
        side whose column must be NULL) is used anywhere but in that test"""
        nullable = set()
        for n, it in enumerate(q.items):
            if it['jt'] in ('LEFT', 'FULL'):
                nullable.add(it['alias'])
            if it['jt'] in ('RIGHT', 'FULL'):
                nullable |= set(x['alias'] for x in q.items[:n])
        scrubbed = set()
        for a in sorted(nullable):
            tests = [c for c in q.where if c.endswith(' IS NULL') and re.search(r'\b%s\.' % a, c)
                     and not AL.search(c.replace(a, ''))]
            if not tests:
                continue
            r = re.compile(r'\b%s\b' % a)
            q.where = [c for c in q.where if c in tests or not r.search(c)]
            pos = [x['alias'] for x in q.items].index(a)
            for it in q.items[pos + 1:]:
                it['on'] = [c for c in it['on'] if not r.search(c)]
            q.select = [c for c in q.select if not r.search(c)]
            q.group = [c for c in q.group if not r.search(c)]
            q.aggs = [c for c in q.aggs if not r.search(c)]
            q.having = [c for c in q.having if not r.search(c)]
            prune_windows(q, r)
            scrubbed.add(a)
        if not q.agg and not q.select:
            q.select = [first_col([x for x in q.items if x['alias'] not in scrubbed][0])]
        if q.agg and not q.aggs and not q.group:
            q.aggs = ['count(*)']


def prune_windows(q, r):
    """drop the window calls (and the windows, filters) that match r"""
    q.windows = [(n, sp) for n, sp in q.windows if not r.search(sp)]
    names = set(n for n, _ in q.windows)
    keep = []
    for w, c in q.wsel:
        m = re.search(r'OVER \(?(win\d+)\b', c)
        if r.search(c) or (m and m.group(1) not in names):
            continue
        keep.append((w, c))
    q.wsel = keep
    have = set(w for w, _ in q.wsel)
    q.wfilter = [f for f in q.wfilter if f.split()[0] in have or f.startswith('c')]


def first_col(it):
    return '%s.%s' % (it['alias'], 'id' if it['table'].get('dim') else 'k')


def render(q, prepared=True):
    """(sql, args) -- args: the parameter literals, comma separated, or ''"""
    if q.agg:
        outs = list(q.group) + list(q.aggs)
        if not outs:
            outs = ['count(*)']
    else:
        outs = list(q.select) or ['1']
        if getattr(q, 'scalar_sel', None):
            outs.append(q.scalar_sel)
    sel = ', '.join('%s AS c%d' % (e, i + 1) for i, e in enumerate(outs))
    if q.wsel and not q.agg:
        if not q.select:
            sel = ''
        sel = ', '.join(([sel] if sel else []) + ['%s AS %s' % (c, w) for w, c in q.wsel])
    fr = fuzz_shapes.from_item(q.items[0])
    for n, it in enumerate(q.items[1:]):
        t = fuzz_shapes.from_item(it)
        jt = it['jt']
        if it.get('lateral'):
            if jt == 'CROSS':
                fr += ' CROSS JOIN LATERAL (%s) %s' % (it['lateral'], it['alias'])
            else:
                fr += ' %s JOIN LATERAL (%s) %s ON %s' % (jt, it['lateral'], it['alias'],
                                                         ' AND '.join(it['on']) if it['on'] else 'true')
            continue
        if jt == 'COMMA' and n + 2 < len(q.items):
            jt = 'CROSS'    # a JOIN after a comma could not see the tables before it
        if jt == 'CROSS':
            fr += ' CROSS JOIN ' + t
        elif jt == 'COMMA':
            fr += ', ' + t
        else:
            fr += ' %s JOIN %s ON %s' % ('INNER' if jt == 'INNER' else jt, t,
                                          ' AND '.join(it['on']) if it['on'] else 'true')
    sql = 'SELECT %s%s FROM %s' % ('DISTINCT ' if q.distinct and not q.agg else '', sel, fr)
    if q.where:
        sql += ' WHERE ' + ' AND '.join(q.where)
    if q.agg and q.group:
        sql += ' GROUP BY ' + ', '.join(q.group)
    if q.agg and q.having:
        sql += ' HAVING ' + ' AND '.join(q.having)
    if q.wsel and not q.agg:
        used = [(n, sp) for n, sp in q.windows if any(re.search(r'OVER \(?%s\b' % n, c) for _, c in q.wsel)]
        if used:
            sql += ' WINDOW ' + ', '.join('%s AS (%s)' % u for u in used)
        filt = [f for f in q.wfilter if not f.startswith('c') or q.select]
        if filt:
            sql = 'SELECT * FROM (%s) sub WHERE %s' % (sql, ' AND '.join(filt))
    elif q.ofilter:
        sql = 'SELECT * FROM (%s) sub WHERE %s' % (sql, ' AND '.join(q.ofilter))
    if q.order or q.limit is not None:
        sql += ' ORDER BY ' + ', '.join(q.orderby or [str(i + 1) for i in range(len(outs))])
    if q.limit is not None and q.ties and (q.orderby or q.order):
        sql += ' FETCH FIRST %d ROWS WITH TIES' % q.limit
    elif q.limit is not None:
        sql += ' LIMIT %d' % q.limit
        if q.offset:
            sql += ' OFFSET %d' % q.offset
    sql = fuzz_shapes.expand(q, sql)
    # parameters
    args = []
    num = {}

    def sub(m):
        i = int(m.group(1))
        if not (prepared and q.prep):
            return q.params[i]
        if i not in num:
            num[i] = len(num) + 1
            args.append(q.params[i])
        return '$%d' % num[i]
    sql = re.sub(r'\{P(\d+)\}', sub, sql)
    if q.dhint and all(re.search(r'\b%s\b' % al, sql) for al in q.dhint):
        sql = '/*+ Redistribute(%s %s) */ ' % q.dhint + sql
    if q.hint and re.search(r'\b%s\b' % q.hint[0], sql):
        h = '/*+ BroadcastJoin(%s) */ ' % q.hint[0]
        sql = h + sql if q.hint[1] == 'lead' else sql.replace('SELECT ', 'SELECT ' + h, 1)
    if q.phint and re.search(r'\b%s\b' % q.phint, sql):
        if sql.startswith('/*+ '):
            sql = '/*+ PreAggregate(%s) ' % q.phint + sql[4:]
        else:
            sql = '/*+ PreAggregate(%s) */ ' % q.phint + sql
    return sql, ', '.join(args)


def mode_of(q):
    if not q.prep or not re.search(r'\{P\d+\}', repr((q.where, [it['on'] for it in q.items]))):
        return '' if not q.prep else q.prep
    return q.prep


def tables_of(q, w=None):
    names = set(it['table']['name'] for it in q.items)
    sql, _ = render(q, False)
    names |= set(re.findall(r'\b((?:tab|dim|mdim|fdim)\d+)\b', sql))
    for n in list(names):
        names |= set(getattr(w, 'deps', {}).get(n, []))
    return names


# --------------------------------------------------------------------------
# running SQL
# --------------------------------------------------------------------------

CHECK_FUNCS = r"""
CREATE FUNCTION fz_m.rows_of(q text, sp text, args text, mode text, gucs text[]) RETURNS text[]
LANGUAGE plpgsql AS $f$
DECLARE
	rec record;
	res text[] := '{}';
	n int := 0;
	i int;
BEGIN
	PERFORM set_config('search_path', sp, true);
	IF gucs IS NOT NULL THEN
		FOR i IN 1 .. coalesce(array_length(gucs, 1), 0) / 2 LOOP
			PERFORM set_config(gucs[2 * i - 1], gucs[2 * i], true);
		END LOOP;
	END IF;
	IF mode = '' THEN
		FOR rec IN EXECUTE q LOOP
			res := res || rec::text;
			n := n + 1;
			EXIT WHEN n > %(cap)s;
		END LOOP;
	ELSE
		EXECUTE 'DEALLOCATE ALL';
		EXECUTE 'PREPARE fzp AS ' || q;
		PERFORM set_config('plan_cache_mode', mode, true);
		FOR rec IN EXECUTE 'EXECUTE fzp' || CASE WHEN args = '' THEN '' ELSE '(' || args || ')' END LOOP
			res := res || rec::text;
			n := n + 1;
			EXIT WHEN n > %(cap)s;
		END LOOP;
		EXECUTE 'DEALLOCATE fzp';
		PERFORM set_config('plan_cache_mode', 'auto', true);
	END IF;
	IF gucs IS NOT NULL THEN
		FOR i IN 1 .. coalesce(array_length(gucs, 1), 0) / 2 LOOP
			PERFORM set_config(gucs[2 * i - 1], NULL, true);
		END LOOP;
	END IF;
	RETURN ARRAY(SELECT r FROM unnest(res) r ORDER BY r COLLATE "C");
END
$f$;

-- logged: after a crash, recovery of an unlogged table truncated this often
-- could fail ("could not create file ...: File exists") and keep the
-- coordinator down
CREATE TABLE fz_m.side (q text, rows text[], err text, ms float8, plain_timeout bool);

-- read after write: one row of table t copied again, through colojoin on
-- the sharded side and plainly on the local one (columns named: the two
-- may order them differently); both or neither
CREATE FUNCTION fz_m.raw_write(t text) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
	cols text;
BEGIN
	SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols FROM pg_attribute
	WHERE attrelid = ('fz_l.' || quote_ident(t))::regclass AND attnum > 0 AND NOT attisdropped;
	BEGIN
		EXECUTE format('INSERT INTO fz_s.%%I (%%s) SELECT %%s FROM fz_l.%%I LIMIT 1', t, cols, cols, t);
		EXECUTE format('INSERT INTO fz_l.%%I (%%s) SELECT %%s FROM fz_l.%%I LIMIT 1', t, cols, cols, t);
	EXCEPTION WHEN OTHERS THEN
		RETURN 'not written: ' || SQLERRM;
	END;
	RETURN 'written';
END
$f$;

-- the sharded side, in a statement of its own (its own statement_timeout)
CREATE FUNCTION fz_m.run_sharded(q text, args text, mode text, gucs text[]) RETURNS void
LANGUAGE plpgsql AS $f$
DECLARE
	a text[];
	ea text;
	detail text;
	t0 timestamptz := clock_timestamp();
BEGIN
	BEGIN
		a := fz_m.rows_of(q, 'fz_s', args, mode, gucs);
	EXCEPTION WHEN OTHERS OR query_canceled THEN
		GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
		ea := SQLSTATE || ' ' || SQLERRM;
		IF SQLERRM LIKE 'colojoin hint %% cannot be honoured' THEN
			ea := ea || ' DETAIL: ' || coalesce(detail, '');
		END IF;
	END;
	PERFORM set_config('plan_cache_mode', 'auto', true);
	PERFORM set_config('search_path', 'public', true);
	TRUNCATE fz_m.side;
	INSERT INTO fz_m.side VALUES (q, a, ea, extract(epoch FROM clock_timestamp() - t0) * 1000);
END
$f$;

-- a sharded run that timed out runs again with colojoin off, in a statement
-- of its own (its own statement_timeout): what plain postgres_fdw cannot
-- answer in time either (a correlated SubPlan over foreign tables run per
-- row, PostgreSQL's own plan) is not colojoin's failure; what it answers in
-- time is
CREATE FUNCTION fz_m.rerun_plain(q text, args text, mode text, gucs text[]) RETURNS void
LANGUAGE plpgsql AS $f$
DECLARE
	a text[];
BEGIN
	PERFORM 1 FROM fz_m.side WHERE side.q = rerun_plain.q AND side.err LIKE '57014 %%';
	IF NOT FOUND THEN
		RETURN;
	END IF;
	BEGIN
		a := fz_m.rows_of(q, 'fz_s', args, mode,
						  coalesce(gucs, '{}'::text[]) || ARRAY['colojoin.enable', 'off']);
	EXCEPTION WHEN query_canceled THEN
		UPDATE fz_m.side SET plain_timeout = true;
	WHEN OTHERS THEN
		NULL;					/* answered, or failed otherwise: colojoin's timeout stands */
	END;
	PERFORM set_config('plan_cache_mode', 'auto', true);
	PERFORM set_config('search_path', 'public', true);
END
$f$;

-- the local side (hints made plain comments: over plain tables a forcing
-- hint is an error), with the session settings of both sides, then the verdict
CREATE FUNCTION fz_m.chk(q text, args text, mode text, sess text[]) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
	a text[];
	b text[];
	ea text;
	eb text;
	da text[];
	db text[];
	ms float8;
	plain_to bool;
	t0 timestamptz := clock_timestamp();
BEGIN
	SELECT rows, err, side.ms, coalesce(side.plain_timeout, false) INTO a, ea, ms, plain_to
	FROM fz_m.side WHERE side.q = chk.q;
	IF NOT FOUND THEN
		RETURN 'CRASH the sharded run did not complete';
	END IF;
	BEGIN
		b := fz_m.rows_of(replace(q, '/*+', '/* '), 'fz_l', args, mode, sess);
	EXCEPTION WHEN OTHERS OR query_canceled THEN
		eb := SQLSTATE || ' ' || SQLERRM;
	END;
	PERFORM set_config('search_path', 'public', true);
	IF eb LIKE '57014 %%' THEN
		RETURN 'SKIP too slow locally';
	ELSIF ea LIKE '57014 %%' AND extract(epoch FROM clock_timestamp() - t0) > 3 THEN
		RETURN 'SKIP too slow on both sides';
	ELSIF ea LIKE '57014 %%' AND plain_to THEN
		RETURN 'SKIP too slow without colojoin too';
	ELSIF ea IS NOT NULL AND eb IS NOT NULL THEN
		RETURN 'BOTHERROR ' || replace(eb, E'\n', ' ');
	ELSIF ea LIKE '0A000 colojoin hint %% cannot be honoured%%' THEN
		RETURN 'HINTREFUSED ' || replace(ea, E'\n', ' ');
	ELSIF ea IS NOT NULL THEN
		RETURN 'ERROR ' || replace(ea, E'\n', ' ');
	ELSIF eb IS NOT NULL THEN
		RETURN 'LOCALERROR ' || replace(eb, E'\n', ' ');
	END IF;
	IF cardinality(a) > %(cap)s AND cardinality(b) > %(cap)s THEN
		RETURN 'SKIP too many rows';
	END IF;
	IF a IS DISTINCT FROM b THEN
		da := ARRAY(SELECT unnest(a) EXCEPT ALL SELECT unnest(b));
		db := ARRAY(SELECT unnest(b) EXCEPT ALL SELECT unnest(a));
		RETURN 'MISMATCH sharded ' || cardinality(a) || ' rows, local ' || cardinality(b)
			|| ' rows; only sharded: ' || left(array_to_string(da[1:3], ' ', 'NULL'), 300)
			|| '; only local: ' || left(array_to_string(db[1:3], ' ', 'NULL'), 300);
	END IF;
	RETURN 'OK';
END
$f$;
""" % {'cap': ROW_CAP}


class PG:
    def __init__(self, args):
        self.host = os.environ.get('PGHOST', '127.0.0.1')
        self.port = os.environ.get('PGPORT', '5432')
        self.user = os.environ.get('PGUSER', 'postgres')
        self.db = os.environ.get('PGDATABASE', 'colojoin_regress')
        self.nodes = {}
        for i in (1, 2, 3):
            p = os.environ.get('CJ_NODE%d_PORT' % i)
            if not p:
                sys.exit('fuzz: CJ_NODE%d_PORT is not set (eval "$(test/cluster/cluster.sh env)")' % i)
            self.nodes[i] = p
        self.verbose = args.verbose

    def psql(self, sql, port=None, stop=True, timeout=600):
        cmd = ['psql', '-X', '-q', '-A', '-t', '-h', self.host, '-p', str(port or self.port),
               '-U', self.user, '-d', self.db, '-v', 'ON_ERROR_STOP=%d' % (1 if stop else 0)]
        env = dict(os.environ, PGOPTIONS='-c client_min_messages=warning')
        try:
            p = subprocess.run(cmd, input=sql, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return 99, '', 'psql timed out after %ds' % timeout
        return p.returncode, p.stdout, p.stderr

    def wait_up(self):
        for _ in range(120):
            rc, out, err = self.psql('SELECT 1', timeout=10)
            if rc == 0:
                return True
            time.sleep(0.5)
        return False


def cleanup_sql():
    return ('SET client_min_messages = warning;\n'
            + ''.join('DROP SCHEMA IF EXISTS %s CASCADE;\n' % s for s in SCHEMAS)
            + ''.join('DROP SERVER IF EXISTS %s CASCADE;\n' % s for s in SERVERS))


def cleanup(pg):
    ok = True
    rc, out, err = pg.psql(cleanup_sql())
    if rc != 0:
        log('fuzz: cleanup on the coordinator failed: ' + err.strip())
        ok = False
    for i, port in pg.nodes.items():
        rc, out, err = pg.psql('SET client_min_messages = warning; DROP SCHEMA IF EXISTS %s CASCADE;'
                               % REMOTE_SCHEMA, port=port)
        if rc != 0:
            log('fuzz: cleanup on node %d failed: %s' % (i, err.strip()))
            ok = False
    return ok


def setup_world(pg, w):
    """returns None or an error text"""
    if not cleanup(pg):
        return 'cleanup failed'
    for i, port in pg.nodes.items():
        sql = 'CREATE SCHEMA %s;\n' % REMOTE_SCHEMA
        sql += ''.join(s + ';\n' for tabs, tgt, s in w.stmts if tgt == i)
        rc, out, err = pg.psql(sql, port=port)
        if rc != 0:
            return 'node %d: %s' % (i, err.strip())
    sql = ['SET client_min_messages = warning',
           'CREATE EXTENSION IF NOT EXISTS colojoin CASCADE']
    sql += ['CREATE SCHEMA %s' % s for s in SCHEMAS]
    for i, port in pg.nodes.items():
        sql.append("CREATE SERVER fz_n%d FOREIGN DATA WRAPPER postgres_fdw OPTIONS "
                   "(host '127.0.0.1', port '%s', dbname '%s', batch_size '100')" % (i, port, pg.db))
        sql.append('CREATE USER MAPPING FOR CURRENT_USER SERVER fz_n%d' % i)
    sql += [s for tabs, tgt, s in w.stmts if tgt == 'c']
    rc, out, err = pg.psql(';\n'.join(sql) + ';\n')
    if rc != 0:
        return 'coordinator DDL: ' + err.strip()
    data = w.data_sql()
    w.data_stmts = data
    rc, out, err = pg.psql(';\n'.join(s for _, _, s in data) + ';\n')
    if rc != 0:
        return 'loading data: ' + err.strip()
    if w.node_analyze:
        for i, port in pg.nodes.items():
            rc, out, err = pg.psql('ANALYZE;\n', port=port)
            if rc != 0:
                return 'node %d ANALYZE: %s' % (i, err.strip())
    rc, out, err = pg.psql(CHECK_FUNCS)
    if rc != 0:
        return 'check functions: ' + err.strip()
    return None


def chk_calls(q, tag):
    """three statements: the sharded run, its run with colojoin off when it
    timed out, then the local run and the verdict
    (prefixed by tag)"""
    sql, args = render(q, True)
    mode = q.prep or ''

    def arr(kvs):
        return 'NULL' if not kvs else 'ARRAY[%s]' % ', '.join(q_lit(x) for kv in kvs for x in kv)
    calls = ("SELECT fz_m.run_sharded($fzq$%s$fzq$, %s, '%s', %s);\n"
             "SELECT fz_m.rerun_plain($fzq$%s$fzq$, %s, '%s', %s);\n"
             "SELECT %s || coalesce(fz_m.chk($fzq$%s$fzq$, %s, '%s', %s), 'NULL');\n"
             % (sql, q_lit(args), mode, arr(q.gucs + q.sess),
                sql, q_lit(args), mode, arr(q.gucs + q.sess),
                q_lit(tag), sql, q_lit(args), mode, arr(q.sess)))
    if q.raw:
        calls = ("BEGIN;\nSELECT fz_m.raw_write(%s) AS fz_raw \\gset\n%sROLLBACK;\n"
                 % (q_lit(q.raw), calls))
    return calls


def run_batch(pg, queries, ids):
    """{id: result text} for the queries of ids; a crash ends the batch early"""
    results = {}
    todo = list(ids)
    while todo:
        lines = ['SET statement_timeout = \'30s\';']
        for i in todo:
            lines.append(chk_calls(queries[i], 'FZ|%d|' % i))
        rc, out, err = pg.psql('\n'.join(lines) + '\n', stop=False, timeout=3600)
        for line in out.splitlines():
            m = re.match(r'FZ\|(\d+)\|(.*)$', line)
            if m:
                results[int(m.group(1))] = m.group(2)
        missing = [i for i in todo if i not in results]
        if not missing:
            break
        # psql stopped (server crash, connection lost) or a statement failed
        # outside the checks: blame the first query without a result
        first = missing[0]
        reason = err.strip().splitlines()
        results[first] = 'CRASH ' + ' '.join(l for l in reason if 'ERROR' in l or 'FATAL' in l
                                             or 'server' in l or 'connection' in l)[:400]
        pg.wait_up()
        todo = missing[1:]
    return results


def run_one(pg, q):
    rc, out, err = pg.psql("SET statement_timeout = '30s';\n" + chk_calls(q, ''), stop=False, timeout=300)
    res = out.strip().splitlines()
    if rc == 0 and res:
        return classify(q, res[-1])
    pg.wait_up()
    return 'CRASH ' + err.strip().replace('\n', ' ')[:400]


# What colojoin refuses, with these errors, once a transaction wrote through
# it (README, Writes: read your writes): a query it cannot run itself would
# read a written node through postgres_fdw, around the writes.
# colojoin refuses no read after a write that PostgreSQL would answer
RAW_REFUSALS = ()


def classify(q, res):
    """a refusal after a write (RAWREFUSED) of a query run after one"""
    if q.raw and any(re.match(p, res) for p in RAW_REFUSALS):
        return 'RAWREFUSED ' + res[len('ERROR '):]
    return res


def failed(res):
    """a forcing hint refused on the sharded side only (HINTREFUSED), and
    a documented refusal after a write (RAWREFUSED), are what colojoin
    promises, not failures"""
    return not (res == 'OK' or res.startswith('BOTHERROR') or res.startswith('SKIP')
                or res.startswith('HINTREFUSED') or res.startswith('RAWREFUSED'))


def signature(res):
    if res.startswith('MISMATCH'):
        return 'MISMATCH'
    s = res
    s = re.sub(r'"[^"]*"', '"X"', s)
    s = re.sub(r'\b\d+\b', 'N', s)
    s = re.sub(r'\(node \S+', '(node X', s)
    return s[:110]


# --------------------------------------------------------------------------
# reduction
# --------------------------------------------------------------------------

def drop_alias(q, a):
    # LATERAL subqueries reading a go with it
    gone = [a] + [it['alias'] for it in q.items
                  if it.get('lateral') and re.search(r'\b%s\b' % a, it['lateral'])]
    r = re.compile(r'\b(%s)\b' % '|'.join(gone))
    q.items = [it for it in q.items if it['alias'] not in gone]
    if not q.items:
        return None
    if q.items[0]['jt'] is not None:
        q.where = [c for c in q.where]
        q.items[0]['jt'] = None
        q.items[0]['on'] = []
        q.items[0]['anti'] = False
    for it in q.items:
        it['on'] = [c for c in it['on'] if not r.search(c)]
    q.where = [c for c in q.where if not r.search(c)]
    q.select = [c for c in q.select if not r.search(c)]
    q.group = [c for c in q.group if not r.search(c)]
    q.aggs = [c for c in q.aggs if not r.search(c)]
    q.having = [c for c in q.having if not r.search(c)]
    prune_windows(q, r)
    if not q.agg and not q.select:
        q.select = [first_col(q.items[0])]
    if q.agg and not q.aggs and not q.group:
        q.aggs = ['count(*)']
    return q


def candidates(q):
    """simpler variants of q, the most promising first"""
    out = []

    def v(f):
        c = q.copy()
        r = f(c)
        if r is not False and r is not None:
            out.append(r if isinstance(r, Query) else c)
    # whole tables first
    for it in reversed(q.items):
        if len(q.items) > 1:
            v(lambda c, a=it['alias']: drop_alias(c, a))
    if q.prep:
        v(lambda c: setattr(c, 'prep', None) or c)
    if q.hint:
        v(lambda c: setattr(c, 'hint', None) or c)
    if q.dhint:
        v(lambda c: setattr(c, 'dhint', None) or c)
    if q.phint:
        v(lambda c: setattr(c, 'phint', None) or c)
    for i in range(len(q.gucs)):
        v(lambda c, i=i: c.gucs.pop(i) and c)
    for i in range(len(q.sess)):
        v(lambda c, i=i: c.sess.pop(i) and c)
    if q.limit is not None:
        v(lambda c: setattr(c, 'limit', None) or setattr(c, 'offset', None) or c)
    if q.offset:
        v(lambda c: setattr(c, 'offset', None) or c)
    if q.order and q.limit is None:
        v(lambda c: setattr(c, 'order', False) or c)
    if q.distinct:
        v(lambda c: setattr(c, 'distinct', False) or c)
    for i in range(len(q.wfilter)):
        v(lambda c, i=i: c.wfilter.pop(i) and c)
    if len(q.wsel) + len(q.select) > 1:
        for i in range(len(q.wsel)):
            v(lambda c, i=i: c.wsel.pop(i) and c)
    for i in range(len(q.where)):
        v(lambda c, i=i: c.where.pop(i) and c)
    for j, it in enumerate(q.items):
        for i in range(len(it['on'])):
            v(lambda c, i=i, j=j: c.items[j]['on'].pop(i) and c)
        if it['jt'] in ('LEFT', 'RIGHT', 'FULL'):
            v(lambda c, j=j: c.items[j].update(jt='INNER') or c)
        if it['jt'] in ('FULL',):
            v(lambda c, j=j: c.items[j].update(jt='LEFT') or c)
        if it['jt'] in ('CROSS', 'COMMA') and it['on'] == []:
            pass
    for i in range(len(q.having)):
        v(lambda c, i=i: c.having.pop(i) and c)
    if q.agg:
        for i in range(len(q.group)):
            v(lambda c, i=i: c.group.pop(i) and c)
        if len(q.aggs) + len(q.group) > 1:
            for i in range(len(q.aggs)):
                v(lambda c, i=i: c.aggs.pop(i) and c)
        for i in range(len(q.aggs)):
            if q.aggs[i] != 'count(*)':
                v(lambda c, i=i: c.aggs.__setitem__(i, 'count(*)') or c)
    else:
        if len(q.select) > 1:
            for i in range(len(q.select)):
                v(lambda c, i=i: c.select.pop(i) and c)
    fuzz_shapes.sub_candidates(q, v)
    return out


def reduce_query(pg, q, res, budget_end, max_tries=250):
    sig = signature(res)
    tries = 0
    progress = True
    while progress and tries < max_tries and time.time() < budget_end:
        progress = False
        for c in candidates(q):
            if tries >= max_tries or time.time() >= budget_end:
                break
            tries += 1
            r = run_one(pg, c)
            if failed(r) and signature(r) == sig:
                q, res = c, r
                progress = True
                break
    return q, res, tries


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def declarations(w, names):
    out = ['-- servers fz_n1..fz_n3 (postgres_fdw, host 127.0.0.1, ports %s, dbname %s) with user mappings;'
           % (', '.join(w.pg.nodes[i] for i in (1, 2, 3)), w.pg.db),
           '-- schemas fz_s, fz_p, fz_l on the coordinator, %s on every node' % REMOTE_SCHEMA]
    for tabs, tgt, s in w.stmts + getattr(w, 'data_stmts', []):
        if tabs is None or set(tabs) & names:
            out.append(('-- on node %d: ' % tgt if tgt != 'c' else '') + s + ';')
    return '\n'.join(out)


def main():
    ap = argparse.ArgumentParser(description='colojoin differential fuzzer')
    ap.add_argument('--seed', type=int, required=True)
    ap.add_argument('--count', type=int, required=True)
    ap.add_argument('--per-world', type=int, default=150,
                    help='queries per set of tables (a new world every so many queries)')
    ap.add_argument('--reduce-budget', type=float, default=float(os.environ.get('FUZZ_REDUCE_BUDGET', 150)),
                    help='seconds spent reducing failures in all (default 150)')
    ap.add_argument('--reduce-per-class', type=int, default=1,
                    help='failures of one class (error message, or mismatch) reduced per world')
    ap.add_argument('--dimension-share', type=float, default=0.25,
                    help='share of the queries that join dimension tables (default 0.25)')
    ap.add_argument('--window-share', type=float, default=0.15,
                    help='share of the queries that select window functions (default 0.15)')
    ap.add_argument('--moved-share', type=float, default=0.12,
                    help='share of the queries of feature moved-joins (default 0.12)')
    ap.add_argument('--lateral-share', type=float, default=0.15,
                    help='share of the other queries given a LATERAL subquery (default 0.15)')
    ap.add_argument('--raw-share', type=float, default=0.15,
                    help='share of the queries run after a write in their transaction, feature '
                         'read-after-write (default 0.15)')
    ap.add_argument('--table-agg-share', type=float, default=0.1,
                    help='share of the queries of feature table-aggs (default 0.1)')
    ap.add_argument('--multi-share', type=float, default=0.1,
                    help='share of the queries of feature multi-joins (default 0.1)')
    ap.add_argument('--subquery-share', type=float, default=0.15,
                    help='share of the queries of feature subqueries (default 0.15)')
    ap.add_argument('--keep', action='store_true', help='leave the tables in place at the end')
    ap.add_argument('--show', action='store_true', help='print the world and the queries, run nothing')
    ap.add_argument('-v', '--verbose', action='store_true')
    for f, h in FEATURES.items():
        ap.add_argument('--no-' + f, action='append_const', dest='exclude', const=f, help='leave out: ' + h.replace('%', '%%'))
    args = ap.parse_args()
    excl = set(args.exclude or [])
    for f in os.environ.get('FUZZ_EXCLUDE', '').replace(' ', '').split(','):
        if f:
            if f not in FEATURES:
                sys.exit('fuzz: FUZZ_EXCLUDE names an unknown feature %r' % f)
            excl.add(f)
    feats = set(FEATURES) - excl

    pg = PG(args)
    rc, out, err = pg.psql("SELECT string_agg(extname, ' ') FROM pg_extension "
                           "WHERE extname IN ('colojoin', 'postgres_fdw')")
    if rc != 0:
        sys.exit('fuzz: cannot reach the coordinator: ' + err.strip())
    had_ext = set(out.split())
    total = 0
    nfail = 0
    classes = {}       # signature -> [count, example]
    budget_end = time.time() + args.reduce_budget
    t0 = time.time()
    world_no = 0
    stats = {}
    both = {}
    refused = {}
    rawref = {}
    if excl:
        log('fuzz: leaving out %s' % ', '.join(sorted(excl)))
    while total < args.count:
        wseed = args.seed * 1000 + world_no
        world_no += 1
        w = World(wseed, feats)
        w.pg = pg
        n = min(args.per_world, args.count - total)
        rng = random.Random(wseed * 7 + 1)
        qg = QGen(w, rng, feats)
        qg.dim_share = args.dimension_share
        qg.win_share = args.window_share
        qg.moved_share = args.moved_share
        qg.lat_share = args.lateral_share
        shares = {'table-aggs': args.table_agg_share, 'multi-joins': args.multi_share,
                  'subqueries': args.subquery_share}
        qg.shapes = [(f, r, shares[f], fn) for f, r, _s, fn in qg.shapes]
        queries = [qg.gen() for _ in range(n)]
        if 'read-after-write' in feats:
            # a generator of its own: the other features' queries stay those of the seed
            wrng = random.Random(wseed * 13 + 5)
            for q in queries:
                sharded = sorted(t for t in tables_of(q, w) if re.match(r'tab\d+$', t))
                if sharded and wrng.random() < args.raw_share:
                    q.raw = wrng.choice(sharded)
        if args.show:
            for t in w.tables + w.dims:
                log('-- ' + w.describe(t))
            log(declarations(w, set(t['name'] for t in w.tables + w.dims)))
            for q in queries:
                log(render(q)[0] + ';  -- ' + render(q)[1] + ' ' + (q.prep or ''))
            total += n
            continue
        tw = time.time()
        err = setup_world(pg, w)
        if err:
            nfail += 1
            sig = 'SETUP ' + signature(err)
            log('\nFAILURE (setup) seed %d world %d: %s' % (args.seed, wseed, err))
            log(declarations(w, set(t['name'] for t in w.tables + w.dims)))
            classes.setdefault(sig, [0, None])[0] += 1
            if world_no > 20 and total == 0:
                break
            continue
        if args.verbose:
            log('fuzz: world %d: %s (setup %.1fs)' % (wseed, '; '.join(w.describe(t) for t in w.tables + w.dims),
                                                     time.time() - tw))
        res = run_batch(pg, queries, range(n))
        for i in res:
            res[i] = classify(queries[i], res[i])
        total += n
        for i in range(n):
            r = res.get(i, 'CRASH')
            kind = r.split(' ')[0]
            stats[kind] = stats.get(kind, 0) + 1
            if kind == 'RAWREFUSED':
                rawref[signature(r)] = rawref.get(signature(r), 0) + 1
            if kind == 'HINTREFUSED':
                hr = re.sub(r'"/\*\+ [^"]*\*/"', '"..."', r.split('DETAIL: ', 1)[-1])
                refused[signature(hr)] = refused.get(signature(hr), 0) + 1
                if args.verbose:
                    log('fuzz: hint refused: %s\n  %s' % (r[:300], render(queries[i])[0]))
            if kind == 'BOTHERROR':
                both[signature(r)] = both.get(signature(r), 0) + 1
                if args.verbose:
                    log('fuzz: both sides failed: %s\n  %s' % (r[:200], render(queries[i])[0]))
        reduced_here = {}
        for i in range(n):
            r = res.get(i, 'CRASH no result')
            if not failed(r):
                continue
            nfail += 1
            sig = signature(r)
            cl = classes.setdefault(sig, [0, None])
            cl[0] += 1
            sql, a = render(queries[i])
            log('\nFAILURE seed %d (world %d) query %d: %s' % (args.seed, wseed, i, r[:600]))
            log('  query: %s%s%s' % (sql, ('  -- parameters: ' + a) if a else '',
                                    ('  -- ' + queries[i].prep) if queries[i].prep else ''))
            if queries[i].gucs:
                log('  settings (sharded run): ' + ', '.join('%s=%s' % kv for kv in queries[i].gucs))
            if queries[i].sess:
                log('  settings (both runs): ' + ', '.join('%s=%s' % kv for kv in queries[i].sess))
            if queries[i].raw:
                log('  in a transaction that first copied a row of %s again (fz_m.raw_write)' % queries[i].raw)
            if reduced_here.get(sig, 0) >= args.reduce_per_class or (cl[1] is not None and cl[0] > 3):
                continue
            reduced_here[sig] = reduced_here.get(sig, 0) + 1
            alone = run_one(pg, queries[i])
            if not (failed(alone) and signature(alone) == sig):
                # it needs what the session ran before it (a crash after
                # the state an earlier query left, say): no reduction
                log('  not reproduced alone (%s): it needs the queries the session ran before it'
                    % alone[:200])
                if i > 0:
                    pq = queries[i - 1]
                    psql_, pa = render(pq)
                    log('  the query before it: %s%s%s' % (psql_, ('  -- parameters: ' + pa) if pa else '',
                                                           ('  -- ' + pq.prep) if pq.prep else ''))
                    if pq.raw:
                        log('  (in a transaction that first copied a row of %s again, fz_m.raw_write, '
                            'then rolled back)' % pq.raw)
                decl = declarations(w, tables_of(queries[i], w) | (tables_of(queries[i - 1], w) if i else set()))
                log('  declarations:\n' + '\n'.join('    ' + l for l in decl.splitlines()))
                if cl[1] is None:
                    cl[1] = (sql, a, queries[i].prep, queries[i].gucs, r, decl, args.seed, wseed)
                continue
            rq, rr, tries = reduce_query(pg, queries[i], r, budget_end)
            rsql, ra = render(rq)
            log('  reduced (%d tries): %s%s%s' % (tries, rsql, ('  -- parameters: ' + ra) if ra else '',
                                                  ('  -- ' + rq.prep) if rq.prep else ''))
            if rq.gucs:
                log('  settings (sharded run): ' + ', '.join('%s=%s' % kv for kv in rq.gucs))
            if rq.sess:
                log('  settings (both runs): ' + ', '.join('%s=%s' % kv for kv in rq.sess))
            log('  result: ' + rr[:600])
            decl = declarations(w, tables_of(rq, w))
            log('  declarations:\n' + '\n'.join('    ' + l for l in decl.splitlines()))
            if cl[1] is None or len(rsql) < len(cl[1][0]):
                cl[1] = (rsql, ra, rq.prep, rq.gucs, rr, decl, args.seed, wseed)
        if args.verbose:
            log('fuzz: world %d: %d queries in %.1fs' % (wseed, n, time.time() - tw))
    if not args.keep and not args.show:
        if not cleanup(pg):
            nfail += 1
        # the extensions this run created go too
        drops = ['DROP EXTENSION IF EXISTS %s;' % e for e in ('colojoin', 'postgres_fdw') if e not in had_ext]
        if drops:
            pg.psql('SET client_min_messages = warning;\n' + '\n'.join(drops) + '\n')
    if classes:
        log('\nfuzz: failure classes (seed %d):' % args.seed)
        for sig, (cnt, ex) in sorted(classes.items(), key=lambda x: -x[1][0]):
            log('  %4d x %s' % (cnt, sig))
            if ex:
                log('         e.g. %s%s' % (ex[0], ('  -- parameters: ' + ex[1]) if ex[1] else ''))
    log('fuzz: seed %d, %.0fs; results: %s' % (args.seed, time.time() - t0,
                                              ', '.join('%s %d' % kv for kv in sorted(stats.items()))))
    for sig, cnt in sorted(both.items(), key=lambda x: -x[1]):
        log('fuzz:   %d x error on both sides (fine): %s' % (cnt, sig))
    for sig, cnt in sorted(refused.items(), key=lambda x: -x[1]):
        log('fuzz:   %d x hint refused (fine): %s' % (cnt, sig))
    for sig, cnt in sorted(rawref.items(), key=lambda x: -x[1]):
        log('fuzz:   %d x refused after a write (documented): %s' % (cnt, sig))
    log('fuzz: %d queries, %d failures' % (total, nfail))
    sys.exit(1 if nfail else 0)


if __name__ == '__main__':
    main()
