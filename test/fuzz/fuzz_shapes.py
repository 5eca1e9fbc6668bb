"""
test/fuzz/fuzz_shapes.py -- query shapes of colojoin's differential fuzzer
(test/fuzz/fuzz.py, which imports this module and binds itself to it):

  table-aggs   aggregates over one sharded table: GROUP BY the key, other
               columns or both, HAVING, DISTINCT, ORDER BY ... LIMIT (total
               orders, or WITH TIES), window functions over its rows and over
               its groups
  multi-joins  three or four tables joined on different keys and columns
               (key = key, key = other column, other = other), inner, outer,
               semi and anti, with aggregates above
  subqueries   IN over a grouped subquery, EXISTS over a DISTINCT derived
               table, WITH queries and derived tables joined inner, left and
               right, grouped by the key, the key plus a column, or other
               columns, with LIMIT, conditions on their aggregates outside,
               correlated and scalar subqueries, NULL keys

The queries are fuzz.Query objects: subqueries sit in q.subs (a dict of
plain dicts, see render_sub) and appear in the query's text as placeholders
{Sn} (or {Sn:a1,a2}, naming the outer aliases a correlated one reads, so
that dropping an alias drops it), WITH queries in q.ctes; fuzz.render
expands them, and the reduction also simplifies inside them
(sub_candidates).  Each shape draws from a random stream of its own (QGen
swaps it in), so the other queries of a seed stay the same ones.
"""

import re

F = None        # the fuzz module, set by bind()

FEATURES = {
    'table-aggs': 'aggregates over one sharded table (GROUP BY the key, other columns or both, HAVING, '
                  'DISTINCT, ORDER BY ... LIMIT / WITH TIES, windows over its rows and over its groups)',
    'multi-joins': 'three or four tables joined on different keys and columns (moves), with aggregates above',
    'stages': 'some of those joins with broadcasts off, so that a join\'s rows move as a whole into the classes '
              'of the next (multi-stage plans)',
    'subqueries': 'IN over GROUP BY ... HAVING, EXISTS over SELECT DISTINCT, WITH queries and derived tables '
                  'joined inner/left/right, grouped by the key, the key and a column or other columns, '
                  'with LIMIT, conditions on their aggregates outside, correlated and scalar subqueries',
}

# columns of each family, to equate with a value of that family
BY_FAMILY = {'int': ['k', 'k2', 'v'], 'text': ['r', 's', 'lower(r)'], 'date': ['d'], 'uuid': ['u'],
             'num': ['n']}


def bind(mod):
    global F
    F = mod


def fam(name):
    if name in F.FAMILY:
        return F.FAMILY[name]
    return F.KEYS[name][1]


def coll(t, name):
    """the collation a text expression of table t carries"""
    return t['rcoll'] if name in ('r', 'lower(r)') else ''


def col_expr(a, name):
    if name in F.KEYS:
        return F.KEYS[name][0].format(a=a)
    return '%s.%s' % (a, name)


def eqx(ea, ta, na, eb, tb, nb, op='='):
    """ea op eb, with COLLATE "C" where two text collations differ"""
    if fam(na) == 'text' and coll(ta, na) != coll(tb, nb):
        return '%s %s %s COLLATE "C"' % (ea, op, eb)
    return '%s %s %s' % (ea, op, eb)


def item(alias, t, jt=None, on=None, **kw):
    d = {'alias': alias, 'table': t, 'jt': jt, 'on': list(on or []), 'anti': False}
    d.update(kw)
    return d


def keys(t):
    return t['scheme']['keys']


# aggregates over alias {a} of a sharded table (results exact: no float)
AGGS = ['count(*)', 'count({a}.k)', 'count({a}.r)', 'count(DISTINCT {a}.k2)', 'count(DISTINCT {a}.r)',
        'count(DISTINCT {a}.k)', 'count(DISTINCT {a}.d)', 'sum({a}.v)', 'sum({a}.k)', 'sum({a}.n)',
        'avg({a}.v)', 'avg({a}.n)', 'avg({a}.k)', 'min({a}.k)', 'max({a}.k)', 'min({a}.r)',
        'max({a}.r COLLATE "C")', 'min({a}.d)', 'max({a}.d)', 'max({a}.n)', 'min({a}.v)',
        'bool_and({a}.v > 20)', 'bool_or({a}.k2 = 3)', 'count(*) FILTER (WHERE {a}.v > 50)',
        'sum({a}.v) FILTER (WHERE {a}.k2 < 5)', 'sum(DISTINCT {a}.v)', 'avg(DISTINCT {a}.n)',
        "string_agg({a}.s, ',' ORDER BY {a}.s)", 'array_agg(DISTINCT {a}.k2 ORDER BY {a}.k2)',
        'var_samp({a}.v)', 'stddev_pop({a}.n)', 'bit_or({a}.v)', "every({a}.s <> 's3')",
        'percentile_disc(0.5) WITHIN GROUP (ORDER BY {a}.v)', 'max({a}.k) - min({a}.k)', 'count({a}.u)',
        'min({a}.u::text)', 'count(DISTINCT lower({a}.r))']
HAVING = ['count(*) > 1', 'count(*) >= 3', 'sum({a}.v) > {X}', 'max({a}.v) < {X}', 'min({a}.k) IS NOT NULL',
          'count(DISTINCT {a}.k2) >= 2', 'avg({a}.n) > {X}', 'bool_or({a}.v > 90)', 'count({a}.r) = count(*)',
          'count(*) = 1']
# grouping expressions that are no partition key (unless the table's key is one)
OTHER_GROUPS = ['{a}.v', '{a}.k2', '{a}.s', '{a}.d', '{a}.r', 'lower({a}.r)', '({a}.k % 7)',
                "date_trunc('month', {a}.d)", '({a}.v IS NULL)', '({a}.n > 100)', '{a}.u', '{a}.k']


class Shapes:
    """generators of QGen (fuzz.py) for the features above"""

    # -- small helpers --------------------------------------------------------

    def x_num(self):
        return str(self.rng.choice([10, 30, 50, 80, 150, 400, 1000]))

    def agg_of(self, a):
        return self.rng.choice(AGGS).format(a=a)

    def having_of(self, a):
        return self.rng.choice(HAVING).replace('{X}', self.x_num()).format(a=a)

    def key_exprs(self, a, t):
        return [k['tmpl'].format(a=a) for k in keys(t)]

    def other_groups(self, a, t, n):
        ks = set(self.key_exprs(a, t))
        cands = [g.format(a=a) for g in OTHER_GROUPS]
        cands = [g for g in cands if g not in ks and g.strip('()') not in ks]
        return self.rng.sample(cands, n)

    def shape_settings(self, q, p=0.3):
        rng = self.rng
        if 'settings' in self.f and rng.random() < p:
            opts = [('colojoin.max_connections_per_node', str(rng.choice([1, 2, 8]))),
                    ('colojoin.enable_broadcast', 'off'), ('colojoin.enable_redistribution', 'off'),
                    ('colojoin.enable_dual_repartition', 'off'), ('colojoin.enable_pre_aggregation', 'off'),
                    ('colojoin.broadcast_threshold', str(rng.choice([0, 10, 100]))),
                    ('colojoin.enable_aggregate_pushdown', 'off'), ('enable_hashagg', 'off'),
                    ('enable_hashjoin', 'off'), ('enable_partitionwise_aggregate', 'on')]
            q.gucs = q.gucs + rng.sample(opts, rng.randint(1, 2))
        if self.on('prepared', 0.12):
            q.prep = rng.choice(['force_custom_plan', 'force_generic_plan'])

    def order_limit(self, q, npos, first=None):
        """ORDER BY ... LIMIT over npos output columns: over all of them
        (total), or first (positions, say an aggregate) then the rest, or
        WITH TIES over first only (ties all come along)"""
        rng = self.rng
        q.order = True
        q.limit = rng.choice([1, 2, 3, 5, 10])
        if first and rng.random() < 0.3:
            q.orderby = first
            q.ties = True
        elif first:
            q.orderby = first + [str(i + 1) for i in range(npos) if str(i + 1) not in
                                 [f.split()[0] for f in first]]
        if rng.random() < 0.2 and not q.ties:
            q.offset = rng.choice([1, 2])

    # -- 1. one table: aggregates, DISTINCT, ORDER BY ... LIMIT, windows ------

    def gen_table_aggs(self, q):
        rng = self.rng
        t = rng.choice(self.w.tables)
        a = 'a1'
        q.items = [item(a, t)]
        self.shape_settings(q)
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            q.where.append(self.filt(q, a, t))
        shape = rng.choice(['key', 'key', 'keycols', 'other', 'other', 'keyplus', 'scalar', 'distinct',
                            'limit', 'window', 'window', 'groupwindow'])
        if shape in ('distinct', 'limit', 'window'):
            return self.table_rows(q, a, t, shape)
        q.agg = True
        if shape == 'key':
            q.group = self.key_exprs(a, t)
        elif shape == 'keycols':
            q.group = ['%s.%s' % (a, c) for k in keys(t) for c in k['cols']]
        elif shape == 'other':
            q.group = self.other_groups(a, t, rng.choice([1, 1, 2]))
        elif shape == 'keyplus':
            q.group = self.key_exprs(a, t) + self.other_groups(a, t, 1)
        elif shape == 'groupwindow':
            q.group = rng.choice([self.key_exprs(a, t), self.other_groups(a, t, rng.choice([1, 2]))])
        rng.shuffle(q.group)
        q.aggs = [self.agg_of(a) for _ in range(rng.randint(1, 4))]
        if q.group and rng.random() < 0.35:
            q.having.append(self.having_of(a))
            if rng.random() < 0.2:
                q.having.append(self.having_of(a))
        if shape == 'groupwindow':
            g = q.group
            wins = ['rank() OVER (ORDER BY count(*) DESC)', 'dense_rank() OVER (ORDER BY sum(%s.v))' % a,
                    'row_number() OVER (ORDER BY count(*) DESC, %s)' % ', '.join(g),
                    'sum(count(*)) OVER ()', 'lag(count(*)) OVER (ORDER BY %s)' % ', '.join(g),
                    'sum(sum(%s.v)) OVER (ORDER BY %s ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)' % (a, ', '.join(g)),
                    'percent_rank() OVER (ORDER BY max(%s.k))' % a,
                    'count(*) OVER (PARTITION BY %s)' % g[0]]
            if len(g) > 1:
                wins.append('sum(count(*)) OVER (PARTITION BY %s ORDER BY %s)' % (g[0], ', '.join(g[1:])))
            q.aggs += rng.sample(wins, rng.randint(1, 2))
        npos = len(q.group) + len(q.aggs)
        if q.group and rng.random() < 0.35:
            j = len(q.group) + rng.randrange(len(q.aggs))
            self.order_limit(q, npos, ['%d %s' % (j + 1, rng.choice(['DESC', 'ASC', 'DESC NULLS LAST']))])
        elif rng.random() < 0.1:
            q.order = True
        if rng.random() < 0.15 and q.group:
            # a condition on the aggregates' output, outside
            q.ofilter.append(rng.choice(['c%d IS NOT NULL' % (len(q.group) + 1),
                                         'c%d > 1' % (len(q.group) + 1) if q.aggs[0].startswith('count')
                                         else 'c1 IS NOT NULL']))
        return q

    def table_rows(self, q, a, t, shape):
        """DISTINCT, ORDER BY ... LIMIT and windows over one table's rows"""
        rng = self.rng
        tot = self.total_order([{'alias': a, 'table': t}])
        if shape == 'distinct':
            exprs = self.key_exprs(a, t) + ['%s.%s' % (a, c) for c in F.COLS] + ['lower(%s.r)' % a,
                                                                              '(%s.k %% 5)' % a]
            q.select = rng.sample(exprs, rng.randint(1, 3))
            q.distinct = True
            if rng.random() < 0.4:
                self.order_limit(q, len(q.select))
            return q
        if shape == 'limit':
            q.select = rng.sample(['%s.%s' % (a, c) for c in F.COLS] + self.key_exprs(a, t),
                                  rng.randint(1, 3))
            first = rng.choice([tot[5], tot[1], tot[3], tot[7], tot[0]])
            first += rng.choice(['', ' DESC', ' DESC NULLS LAST', ' NULLS FIRST'])
            q.limit = rng.choice([1, 3, 10, 40])
            if rng.random() < 0.3:
                q.orderby, q.ties = [first], True
            else:
                q.orderby = [first] + tot
            if rng.random() < 0.2 and not q.ties:
                q.offset = rng.choice([1, 4])
            return q
        # windows over the rows, partitioned by the key or by other columns
        q.select = rng.sample(['%s.%s' % (a, c) for c in F.COLS], rng.randint(1, 3))
        for i in range(rng.choice([1, 1, 2, 3])):
            x = rng.random()
            if x < 0.4:
                part = self.key_exprs(a, t)
            elif x < 0.5:
                part = ['%s.%s' % (a, c) for k in keys(t) for c in k['cols']]
            elif x < 0.85:
                part = self.other_groups(a, t, rng.choice([1, 1, 2]))
            else:
                part = []
            pc = ('PARTITION BY ' + ', '.join(part)) if part else ''
            y = rng.random()
            if y < 0.45:
                fn = rng.choice(['row_number()', 'ntile(3)', 'lag(%s.v)' % a, 'lead(%s.r, 2)' % a,
                                 'first_value(%s.n)' % a, 'nth_value(%s.d, 2)' % a, 'sum(%s.v)' % a,
                                 'count(*)', 'lag(%s.k, 1, -1)' % a])
                order = tot[:]
                if rng.random() < 0.5:
                    order.insert(0, rng.choice(['%s.v DESC' % a, '%s.d' % a, '%s.n NULLS FIRST' % a]))
                spec = '%s ORDER BY %s' % (pc, ', '.join(order))
                if rng.random() < 0.3:
                    spec += rng.choice([' ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING',
                                        ' ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING',
                                        ' ROWS 2 PRECEDING'])
            elif y < 0.8:
                fn = rng.choice(['rank()', 'dense_rank()', 'cume_dist()', 'percent_rank()', 'count(*)',
                                 'sum(%s.v)' % a, 'max(%s.d)' % a, 'avg(%s.n)' % a])
                spec = '%s ORDER BY %s%s' % (pc, rng.choice(['%s.v' % a, '%s.d' % a, '%s.k2' % a,
                                                            '%s.r COLLATE "C"' % a]),
                                             rng.choice(['', ' DESC', ' NULLS FIRST']))
            else:
                fn = rng.choice(['count(*)', 'sum(%s.v)' % a, 'min(%s.r)' % a, 'avg(%s.n)' % a,
                                 'max(%s.k)' % a, 'count(%s.u)' % a])
                spec = pc
            q.wsel.append(('w%d' % (i + 1), '%s OVER (%s)' % (fn, spec.strip())))
        if rng.random() < 0.35:
            cands = [w for w, c in q.wsel if re.match(r'(row_number|rank|dense_rank|count\(\*\)) OVER', c)]
            if cands:
                q.wfilter.append('%s %s %d' % (rng.choice(cands), rng.choice(['<=', '=', '<']),
                                               rng.randint(1, 3)))
        return q

    # -- 2. three or four tables on different keys ----------------------------

    def link(self, q, x, tx, y, ty):
        """(conditions, kind) joining new alias x to y: keys, x's key with a
        column of y, y's key with a column of x, or other columns"""
        rng = self.rng
        r = rng.random()
        if r < 0.3:
            return self.keyeq(x, tx, y, ty), 'keys'
        if r < 0.8:
            # one side's partition key equated with a column of the other
            kt, ka, ot, oa = (tx, x, ty, y) if r < 0.55 else (ty, y, tx, x)
            conds = []
            for k in keys(kt):
                f = k['family']
                c = rng.choice(BY_FAMILY[f])
                conds.append(eqx(k['tmpl'].format(a=ka), kt, k['cols'][0] if f == 'text' else k['name'],
                                 col_expr(oa, c), ot, c))
            return conds, 'key-col'
        f = rng.choice(['int', 'int', 'int', 'text', 'date', 'uuid', 'num'])
        cx, cy = rng.choice(BY_FAMILY[f]), rng.choice(BY_FAMILY[f])
        return [eqx(col_expr(x, cx), tx, cx, col_expr(y, cy), ty, cy)], 'cols'

    def gen_multi(self, q):
        rng = self.rng
        tabs = self.w.tables
        self.shape_settings(q)
        n = rng.choice([3, 3, 4, 4])
        t1 = rng.choice(tabs)
        q.items.append(item('a1', t1))
        est = max(1, t1['N'])
        vis = [q.items[0]]
        kinds = ['INNER'] * 5
        if 'outer' in self.f:
            kinds += ['LEFT', 'LEFT', 'RIGHT']
        if 'semi' in self.f:
            kinds += ['SEMI']
        if 'anti' in self.f:
            kinds += ['ANTI', 'ANTIJOIN']
        for i in range(2, n + 1):
            x = 'a%d' % i
            for _try in range(10):
                t = rng.choice(tabs)
                prev = rng.choice(vis)
                conds, kind = self.link(q, x, t, prev['alias'], prev['table'])
                if est * self.fanout(t) <= 150000:
                    break
            else:
                break
            jt = rng.choice(kinds)
            if rng.random() < 0.2:
                conds.append(self.filt(q, x, t))
            if rng.random() < 0.1:
                conds.append('%s.v %s %s.v' % (x, rng.choice(['<', '<>', '>=']), prev['alias']))
            if jt in ('SEMI', 'ANTI'):
                q.where.append('%sEXISTS (SELECT FROM %s %s WHERE %s)' % (
                    'NOT ' if jt == 'ANTI' else '', t['name'], x, ' AND '.join(conds)))
                continue
            it = item(x, t, 'LEFT' if jt == 'ANTIJOIN' else jt, conds)
            if jt == 'ANTIJOIN':
                it['anti'] = True
                m = re.search(r'(%s\.\w+)' % x, conds[0])
                q.where.append('%s IS NULL' % (m.group(1) if m else '%s.k' % x))
            q.items.append(it)
            est *= self.fanout(t)
            if not it['anti'] or 'anti-cols' in self.f:
                vis.append(it)
        for _ in range(rng.choice([0, 1, 1, 2])):
            it = rng.choice(q.items)
            q.where.append(self.filt(q, it['alias'], it['table']))
        if est > 20000 or rng.random() < 0.75:
            q.agg = True
            for _ in range(rng.choice([0, 1, 1, 2])):
                it = rng.choice(vis)
                q.group.append(self.colref(it['alias'], it['table'])[0])
            one = rng.choice(vis) if rng.random() < 0.4 else None
            for _ in range(rng.randint(1, 4)):
                q.aggs.append(self.agg_of((one or rng.choice(vis))['alias']))
            if q.group and rng.random() < 0.25:
                q.having.append(self.having_of(rng.choice(vis)['alias']))
            if q.group and rng.random() < 0.3:
                j = len(q.group) + rng.randrange(len(q.aggs))
                self.order_limit(q, len(q.group) + len(q.aggs), ['%d DESC' % (j + 1)])
            if 'hints' in self.f and len(q.items) > 1 and rng.random() < 0.05:
                q.phint = one['alias'] if one is not None and rng.random() < 0.8 else \
                    rng.choice(q.items)['alias']
        else:
            q.select = ['%s.%s' % (it['alias'], rng.choice(F.COLS))
                        for it in (rng.choice(vis) for _ in range(rng.randint(1, 4)))]
            if rng.random() < 0.3:
                q.limit = rng.choice([1, 5, 20])
                q.orderby = self.total_order(vis)
        if 'hints' in self.f and rng.random() < 0.08:
            small = [it for it in q.items[1:] if it['table']['N'] <= 150 and it['jt'] in ('INNER', 'LEFT')]
            if small:
                q.hint = (rng.choice(small)['alias'], 'lead')
        # a stream of its own: the seed's other queries stay the same ones
        if 'stages' in self.f and self.srng.random() < 0.3:
            q.gucs = q.gucs + [('colojoin.enable_broadcast', 'off')]
        return q

    # -- 3. subqueries ----------------------------------------------------------

    def new_sub(self, q, t, mode, corr=None):
        """a subquery over t (see render_sub): its first output column k is
        what a join equates; returns (name, sub)"""
        rng = self.rng
        sa = 'q%d' % self.nsub
        self.nsub += 1
        ks = keys(t)
        s = {'table': t, 'alias': sa, 'out': [], 'where': [], 'group': [], 'having': [],
             'distinct': False, 'order': [], 'limit': None, 'mode': mode}
        kexprs = [k['tmpl'].format(a=sa) for k in ks]
        knames = [k['cols'][0] if k['family'] == 'text' else k['name'] for k in ks]
        if mode in ('key', 'keyx', 'limit', 'distinct', 'plain'):
            s['out'] = [(e, 'k' if i == 0 else 'kk%d' % i, n) for i, (e, n) in enumerate(zip(kexprs, knames))]
            s['kfam'] = ks[0]['family']
        elif mode == 'keycols':
            cols = [c for k in ks for c in k['cols']]
            s['out'] = [('%s.%s' % (sa, c), 'k' if i == 0 else 'kk%d' % i, c) for i, c in enumerate(cols)]
            s['kfam'] = fam(cols[0])
        else:           # 'other', 'distinct-other': a column that is no key
            kn = set(k['name'] for k in ks)
            c = rng.choice([c for c in ['v', 'k2', 'd', 's', 'r', 'lower(r)', 'u', 'n', 'k'] if c not in kn])
            s['out'] = [(col_expr(sa, c), 'k', c)]
            s['kfam'] = fam(c)
        if mode in ('keyx', 'distinct', 'distinct-other') and rng.random() < (0.9 if mode == 'keyx' else 0.4):
            c = rng.choice(['v', 'k2', 'd', 's'])
            s['out'].append(('%s.%s' % (sa, c), 'x', c))
        if mode in ('distinct', 'distinct-other'):
            s['distinct'] = True
        elif mode != 'plain':
            s['group'] = [e for e, _n, _c in s['out']]
        if mode == 'plain':
            c = rng.choice(['v', 'k2', 'd', 's'])
            s['out'].append(('%s.%s' % (sa, c), 'x', c))
        if corr:
            s['where'] += corr(sa)
        if rng.random() < 0.35:
            s['where'].append(self.filt(q, sa, t))
        elif rng.random() < 0.1:
            s['where'].append('(%s.k IS NULL OR %s.v > %d)' % (sa, sa, rng.randint(10, 90)))
        if s['group']:
            aggs = [('count(*)', 'n'), ('sum(%s.v)' % sa, 'sv'), ('max(%s.d)' % sa, 'mx'),
                    ('min(%s.r)' % sa, 'mn'), ('count(DISTINCT %s.k2)' % sa, 'cd'), ('avg(%s.n)' % sa, 'av'),
                    ('count(%s.k)' % sa, 'ck')]
            s['aggs'] = [aggs[0]] + rng.sample(aggs[1:], rng.randint(0, 3))
            if rng.random() < 0.4:
                s['having'].append(self.having_of(sa))
        else:
            s['aggs'] = []
        if mode == 'limit' or (mode == 'plain' and rng.random() < 0.3):
            if s['group']:
                s['order'] = [rng.choice(['count(*) DESC', 'sum(%s.v)' % sa, 'max(%s.d) DESC NULLS LAST' % sa])] \
                    + s['group']
            else:
                s['order'] = self.total_order([{'alias': sa, 'table': t}])
            s['limit'] = rng.choice([1, 3, 5, 20])
        name = str(len(q.subs) + 1)
        q.subs[name] = s
        return name, s

    def outer_expr(self, it, f):
        """(expression, column name) of family f of the outer item it: its
        partition key where the family allows, else a column"""
        rng = self.rng
        t = it['table']
        a = it['alias']
        k = keys(t)[0]
        if k['family'] == f and rng.random() < 0.8:
            return k['tmpl'].format(a=a), (k['cols'][0] if f == 'text' else k['name'])
        c = rng.choice(BY_FAMILY[f])
        return col_expr(a, c), c

    def gen_subq(self, q):
        rng = self.rng
        tabs = self.w.tables
        self.shape_settings(q, 0.25)
        t1 = rng.choice(tabs)
        q.items.append(item('a1', t1))
        est = max(1, t1['N'])
        if rng.random() < 0.3:
            same = [t for t in tabs if t['family'] == t1['family']]
            t2 = rng.choice(same)
            if est * self.fanout(t2) <= 50000:
                jt = rng.choice(['INNER', 'INNER', 'LEFT'] if 'outer' in self.f else ['INNER'])
                q.items.append(item('a2', t2, jt, self.keyeq('a2', t2, 'a1', t1)))
                est *= self.fanout(t2)
        outer = list(q.items)
        if rng.random() < 0.4:
            it = rng.choice(outer)
            q.where.append(self.filt(q, it['alias'], it['table']))
        kinds = ['in', 'in', 'exists', 'exists', 'cte', 'cte', 'cte', 'derived', 'derived', 'derived']
        # a subplan per outer row, each a round trip to the nodes: few rows
        if est <= 60:
            kinds += ['corr', 'scalar']
        self.scalars = []
        joined = []         # (item, sub) of WITH queries and derived tables
        for _ in range(rng.choice([1, 1, 1, 2])):
            kind = rng.choice(kinds)
            it = rng.choice(outer)
            t = rng.choice([x for x in tabs if x['family'] == it['table']['family']]) \
                if rng.random() < 0.8 else rng.choice(tabs)
            mode = rng.choice(['key', 'key', 'key', 'keycols', 'keyx', 'keyx', 'other', 'other', 'limit',
                               'distinct', 'distinct', 'distinct-other', 'plain'])
            if kind in ('in', 'exists'):
                self.sub_predicate(q, kind, it, t, mode)
            elif kind == 'corr':
                self.sub_correlated(q, it, t)
            elif kind == 'scalar':
                self.sub_scalar(q, it, t)
            else:
                if mode == 'plain' and est * self.fanout(t) > 50000:
                    mode = 'key'
                r = self.sub_join(q, kind, it, t, mode)
                if r:
                    joined.append(r)
                    if r[1]['mode'] in ('plain', 'keyx', 'other', 'distinct', 'distinct-other'):
                        est *= self.fanout(t)
        self.sub_output(q, joined, est)
        return q

    def sub_predicate(self, q, kind, it, t, mode):
        """x [NOT] IN (SELECT k ... GROUP BY k HAVING ...), or [NOT] EXISTS
        (SELECT FROM (SELECT DISTINCT k ...) e WHERE e.k = x)"""
        rng = self.rng
        if kind == 'exists' and mode in ('key', 'keycols', 'keyx', 'other', 'limit') and rng.random() < 0.4:
            mode = rng.choice(['distinct', 'distinct-other'])
        name, s = self.new_sub(q, t, mode)
        neg = 'anti' in self.f and (rng.random() < 0.3 or 'semi' not in self.f)
        oa = it['alias']
        pairs = []
        for e, n, c in s['out']:
            if n == 'k' or (n.startswith('kk') and rng.random() < 0.8) or (n == 'x' and rng.random() < 0.3):
                oe, oc = self.outer_expr(it, fam(c))
                pairs.append((n, c, oe, oc))
        if kind == 'in':
            # IN reads the columns it compares; aggregates only in HAVING
            s['out'] = [o for o in s['out'] if o[1] in [p[0] for p in pairs]]
            s['aggs'] = []
            lhs = []
            for n, c, oe, oc in pairs:
                if fam(c) == 'text' and coll(t, c) != coll(it['table'], oc):
                    oe += ' COLLATE "C"'
                lhs.append(oe)
            l = lhs[0] if len(lhs) == 1 else '(%s)' % ', '.join(lhs)
            q.where.append('%s %sIN ({S%s})' % (l, 'NOT ' if neg else '', name))
            return
        e = 'e%d' % self.nsub
        self.nsub += 1
        conds = []
        for n, c, oe, oc in pairs:
            op = 'IS NOT DISTINCT FROM' if 'null-keys' in self.f and rng.random() < 0.08 else '='
            conds.append(eqx('%s.%s' % (e, n), t, c, oe, it['table'], oc, op))
        if s['aggs'] and rng.random() < 0.4:
            conds.append('%s.n > 1' % e)
        if rng.random() < 0.15 and any(o[1] == 'x' and o[2] in ('v', 'k2') for o in s['out']):
            conds.append('%s.x < %s.v' % (e, oa))
        q.where.append('%sEXISTS (SELECT FROM ({S%s}) %s WHERE %s)' % ('NOT ' if neg else '', name, e,
                                                                       ' AND '.join(conds)))

    def sub_correlated(self, q, it, t):
        """EXISTS over a correlated subquery that groups (a subplan per row)"""
        rng = self.rng
        oa = it['alias']

        def corr(sa):
            k = keys(t)[0]
            oe, oc = self.outer_expr(it, k['family'])
            return [eqx(k['tmpl'].format(a=sa), t, k['cols'][0] if k['family'] == 'text' else k['name'],
                        oe, it['table'], oc)]
        name, s = self.new_sub(q, t, rng.choice(['key', 'other', 'keyx']), corr)
        s['out'] = s['out'][:1]
        s['aggs'] = []
        if not s['having']:
            s['having'] = ['count(*) > 1']
        neg = 'anti' in self.f and rng.random() < 0.3
        q.where.append('%sEXISTS ({S%s:%s})' % ('NOT ' if neg else '', name, oa))

    def sub_scalar(self, q, it, t):
        """a correlated scalar subquery, in the output or in WHERE"""
        rng = self.rng
        oa = it['alias']
        sa = 'q%d' % self.nsub
        self.nsub += 1
        k = keys(t)[0]
        oe, oc = self.outer_expr(it, k['family'])
        s = {'table': t, 'alias': sa, 'out': [], 'where': [
            eqx(k['tmpl'].format(a=sa), t, k['cols'][0] if k['family'] == 'text' else k['name'],
                oe, it['table'], oc)], 'group': [], 'having': [], 'distinct': False, 'order': [],
            'limit': None, 'mode': 'scalar',
            'aggs': [(rng.choice(['count(*)', 'sum(%s.v)' % sa, 'max(%s.d)' % sa, 'count(DISTINCT %s.k2)' % sa]),
                      'y')]}
        if rng.random() < 0.3:
            s['where'].append(self.filt(q, sa, t))
        name = str(len(q.subs) + 1)
        q.subs[name] = s
        ref = '({S%s:%s})' % (name, oa)
        if rng.random() < 0.5 and s['aggs'][0][0] in ('count(*)',):
            q.where.append('%s %s %d' % (ref, rng.choice(['>', '<=', '=']), rng.randint(0, 3)))
        else:
            self.scalars.append(ref)

    def sub_join(self, q, kind, it, t, mode):
        """a WITH query or a derived table joined to item it on its k"""
        rng = self.rng
        name, s = self.new_sub(q, t, mode)
        x = 'a%d' % (len(q.items) + 1)
        oe, oc = self.outer_expr(it, s['kfam'])
        op = 'IS NOT DISTINCT FROM' if 'null-keys' in self.f and rng.random() < 0.06 else '='
        kc = [o[2] for o in s['out'] if o[1] == 'k'][0]
        conds = [eqx('%s.k' % x, t, kc, oe, it['table'], oc, op)]
        for o in s['out'][1:]:
            if o[1].startswith('kk') and rng.random() < 0.8:
                e2, c2 = self.outer_expr(it, fam(o[2]))
                conds.append(eqx('%s.%s' % (x, o[1]), t, o[2], e2, it['table'], c2))
            elif o[1] == 'x' and rng.random() < 0.4:
                c2 = rng.choice(BY_FAMILY[fam(o[2])])
                conds.append(eqx('%s.x' % x, t, o[2], col_expr(it['alias'], c2), it['table'], c2))
        jts = ['INNER', 'INNER']
        if 'outer' in self.f:
            jts += ['LEFT', 'LEFT', 'LEFT', 'RIGHT']
            if op == '=':
                jts += ['FULL']
        jt = rng.choice(jts)
        new = item(x, t, jt, conds)
        if kind == 'cte':
            new['cte'] = 'cte%s' % name
            q.ctes.append(('cte%s' % name, name, rng.choice(['', '', '', 'MATERIALIZED ', 'NOT MATERIALIZED '])))
            if rng.random() < 0.3:
                # read twice: PostgreSQL materializes it
                q.where.append(rng.choice(['EXISTS (SELECT FROM cte%s)' % name,
                                           '%s.k >= (SELECT min(k) FROM cte%s)' % (x, name),
                                           '%s.k >= (SELECT min(k) FROM cte%s)' % (x, name)]))
        else:
            new['dt'] = name
        if s['aggs'] and rng.random() < 0.4:
            # a condition on the subquery's aggregates, in WHERE or in ON
            names = [n for _e, n in s['aggs']]
            c = rng.choice(['%s.n > 1' % x, '%s.n >= 2' % x, 'coalesce(%s.n, 0) < 2' % x] +
                           (['%s.sv > %s' % (x, self.x_num())] if 'sv' in names else []) +
                           (['%s.mx IS NOT NULL' % x] if 'mx' in names else []))
            (new['on'] if rng.random() < 0.3 and jt != 'FULL' else q.where).append(c)
        elif jt == 'LEFT' and 'anti' in self.f and rng.random() < 0.3:
            q.where.append('%s.k IS NULL' % x)
            new['anti'] = True
        if rng.random() < 0.15 and it is q.items[0] and jt == 'INNER':
            # the subquery first: FROM (SELECT ...) a JOIN t ON ...
            first = q.items[0]
            new['jt'], first['jt'], first['on'] = None, 'INNER', new['on']
            new['on'] = []
            q.items.insert(0, new)
        else:
            q.items.append(new)
        return new, s

    def sub_output(self, q, joined, est):
        """the outer query's output: aggregates (over the subqueries'
        columns too), or columns with ORDER BY (every column) ... LIMIT"""
        rng = self.rng
        vis_t = [it for it in q.items if not it.get('dt') and not it.get('cte')
                 and (not it['anti'] or 'anti-cols' in self.f)]
        vis_s = [(it, s) for it, s in joined if not it['anti'] or 'anti-cols' in self.f]
        if est > 20000 or rng.random() < 0.5:
            q.agg = True
            for _ in range(rng.choice([0, 1, 1, 2])):
                if vis_s and rng.random() < 0.5:
                    it, s = rng.choice(vis_s)
                    q.group.append(rng.choice(sub_cols(it, s))[0])
                else:
                    it = rng.choice(vis_t)
                    q.group.append(self.colref(it['alias'], it['table'])[0])
            for _ in range(rng.randint(1, 3)):
                if vis_s and rng.random() < 0.5:
                    it, s = rng.choice(vis_s)
                    c, f = rng.choice(sub_cols(it, s))
                    if f in ('int', 'num'):
                        fns = ['sum(%s)', 'max(%s)', 'count(%s)', 'avg(%s)', 'count(DISTINCT %s)']
                    elif f == 'uuid':
                        fns = ['count(%s)', 'count(DISTINCT %s)', 'min(%s::text)']
                    else:
                        fns = ['count(%s)', 'count(DISTINCT %s)', 'max(%s)', 'min(%s)']
                    q.aggs.append(rng.choice(fns) % c)
                else:
                    q.aggs.append(self.agg_of(rng.choice(vis_t)['alias']))
            if q.group and rng.random() < 0.25:
                j = len(q.group) + rng.randrange(len(q.aggs))
                self.order_limit(q, len(q.group) + len(q.aggs), ['%d DESC' % (j + 1)])
            return
        for _ in range(rng.randint(1, 3)):
            if vis_s and rng.random() < 0.5:
                it, s = rng.choice(vis_s)
                q.select.append(rng.choice(sub_cols(it, s))[0])
            else:
                it = rng.choice(vis_t)
                q.select.append('%s.%s' % (it['alias'], rng.choice(F.COLS)))
        q.select += self.scalars
        if rng.random() < 0.3:
            q.limit = rng.choice([1, 3, 10])
            tot = self.total_order(vis_t)
            for it, s in vis_s:
                tot += [c + (' COLLATE "C"' if f == 'text' else '') for c, f in sub_cols(it, s)]
            q.orderby = tot + self.scalars


AGG_FAMILY = {'n': 'int', 'sv': 'int', 'cd': 'int', 'ck': 'int', 'av': 'num', 'mx': 'date', 'mn': 'text'}


def sub_cols(it, s):
    """(column, family) of every output column of subquery s joined as it"""
    return [('%s.%s' % (it['alias'], n), fam(c)) for _e, n, c in s['out']] + \
        [('%s.%s' % (it['alias'], n), AGG_FAMILY[n]) for _e, n in s['aggs']]


# --------------------------------------------------------------------------
# rendering and reduction of the subqueries (called by fuzz.render and
# fuzz.candidates)
# --------------------------------------------------------------------------

SUBREF = re.compile(r'\{S(\d+)(?::[\w,]*)?\}')


def render_sub(s):
    outs = ['%s AS %s' % (e, n) for e, n, _c in s['out']] + ['%s AS %s' % (e, n) for e, n in s['aggs']]
    sql = 'SELECT %s%s FROM %s %s' % ('DISTINCT ' if s['distinct'] else '', ', '.join(outs) or '1',
                                      s['table']['name'], s['alias'])
    if s['where']:
        sql += ' WHERE ' + ' AND '.join(s['where'])
    if s['group']:
        sql += ' GROUP BY ' + ', '.join(s['group'])
    if s['having']:
        sql += ' HAVING ' + ' AND '.join(s['having'])
    if s['limit'] is not None:
        if s['order']:
            sql += ' ORDER BY ' + ', '.join(s['order'])
        sql += ' LIMIT %d' % s['limit']
    return sql


def from_item(it):
    if it.get('dt'):
        return '({S%s}) %s' % (it['dt'], it['alias'])
    if it.get('cte'):
        return '%s %s' % (it['cte'], it['alias'])
    return '%s %s' % (it['table']['name'], it['alias'])


def expand(q, sql):
    """the subqueries' text in place of their placeholders, and the WITH
    queries the text reads in front"""
    for _ in range(4):
        if not SUBREF.search(sql):
            break
        sql = SUBREF.sub(lambda m: render_sub(q.subs[m.group(1)]), sql)
    used = [(n, sub, mat) for n, sub, mat in q.ctes if re.search(r'\b%s\b' % n, sql)]
    if used:
        sql = 'WITH ' + ', '.join('%s AS %s(%s)' % (n, mat, render_sub(q.subs[sub])) for n, sub, mat in used) \
            + ' ' + sql
    return sql


def sub_candidates(q, v):
    """simpler variants inside the subqueries (v: fuzz.candidates' adder)"""
    if q.ofilter:
        for i in range(len(q.ofilter)):
            v(lambda c, i=i: c.ofilter.pop(i) and c)
    if q.ties:
        v(lambda c: setattr(c, 'ties', False) or c)
    if q.orderby and q.limit is None:
        v(lambda c: setattr(c, 'orderby', None) or c)
    for j, (n, sub, mat) in enumerate(q.ctes):
        if mat:
            v(lambda c, j=j: c.ctes.__setitem__(j, c.ctes[j][:2] + ('',)) or c)
    for name, s in sorted(q.subs.items()):
        for i in range(len(s['where'])):
            v(lambda c, i=i, name=name: c.subs[name]['where'].pop(i) and c)
        for i in range(len(s['having'])):
            v(lambda c, i=i, name=name: c.subs[name]['having'].pop(i) and c)
        if s['limit'] is not None:
            v(lambda c, name=name: c.subs[name].update(limit=None, order=[]) or c)
        if s['distinct']:
            v(lambda c, name=name: c.subs[name].update(distinct=False) or c)
        for i in range(1, len(s['aggs'])):
            v(lambda c, i=i, name=name: c.subs[name]['aggs'].pop(i) and c)
        for i in range(1, len(s['out'])):
            def drop_out(c, i=i, name=name):
                sc = c.subs[name]
                e = sc['out'].pop(i)[0]
                sc['group'] = [g for g in sc['group'] if g != e]
                return c
            v(drop_out)
