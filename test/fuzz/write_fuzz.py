#!/usr/bin/env python3
"""
test/fuzz/write_fuzz.py -- seeded randomized write-sequence test of colojoin.

What it owns: random *transactions of writes* against sharded tables,
compared with the same transactions against plain local twins.  (Reads
alone are test/fuzz/fuzz.py's.)

From a seed it declares a world: sharded tables of schema wf_s over the
three nodes of the test cluster (servers wf_n1..wf_n3) -- hash tables made
by colojoin.create_shards, some colocated with each other, one declared the
PostgreSQL way (CREATE FOREIGN TABLE ... PARTITION OF, remote tables in
schema wf_r of the nodes), a LIST table (a partition accepting NULL, a
DEFAULT one, or values no partition takes), a RANGE table (one range
sub-partitioned by HASH), a table whose remote leaves have a unique index
for ON CONFLICT, replicas of some leaves (colojoin.add_replica) -- and a
plain twin of each in schema wf_l holding the same rows (with a CHECK
standing for the rows no partition takes, and UNIQUE for the remote unique
index), plus a plain table loc present in both.

Then it generates write sequences: BEGIN; 2-8 statements among INSERT
VALUES, INSERT ... SELECT (GROUP BY, RETURNING, ON CONFLICT DO NOTHING / DO
UPDATE), UPDATE (on keys or not, FROM a colocated table, a non-colocated
one, the local table or a subquery, subqueries in WHERE and SET, volatile
functions that are always true, RETURNING), DELETE (USING, RETURNING), COPY
FROM STDIN (text and csv), reads (counts, sums, joins), SAVEPOINT /
ROLLBACK TO SAVEPOINT / RELEASE; then COMMIT or ROLLBACK.  A share of the
sequences creates a sharded table inside the transaction (CREATE TABLE +
create_shards, in a new schema or not) and loads it.

Each sequence runs on its own coordinator session with search_path wf_s
(sharded) and again with wf_l (twins); the same SQL text on both sides,
except create_shards, which is "SELECT <its result>" on the twin side.
A sequence fails when
  1. a statement's result differs: its rows (RETURNING, reads) as a
     multiset, or its command tag (the rows it wrote);
  2. a statement fails on one side only (an error on both sides is
     PostgreSQL refusing the same thing: fine);
  3. after the transaction, a table's content read on the coordinator
     differs from its twin's;
  4. read directly on the nodes, a leaf's primary placement does not hold
     exactly the twin's rows of that partition (pg_get_partition_
     constraintdef), or a replica placement differs from its primary;
  5. a prepared transaction is left on a node.
A failure is printed with the seed, the declarations of the tables it
involves, and the sequence, re-run alone on fresh sessions and reduced
(statements dropped while it still fails the same way).  The last line is
"write_fuzz: N sequences, M failures"; the exit status is non-zero on any
failure.

Between sequences that committed (or failed) every placement and every
twin is put back to the rows it held after setup (snapshots on each
server, restored directly), so every sequence starts from the world the
declarations describe.  Statements go over a small client of the
PostgreSQL wire protocol (standard library only: sockets), which gives
each statement's rows, tag and SQLSTATE and runs COPY FROM STDIN.

Usage (ports from the environment, as test/cluster/cluster.sh env prints
them: PGHOST, PGPORT, PGUSER, PGDATABASE, CJ_NODE1_PORT..CJ_NODE3_PORT):

    write_fuzz.py --seed SEED --count COUNT [--per-world N] [--keep] [-v]
"""

import argparse
import collections
import os
import random
import re
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True      # no __pycache__ in the source tree
from fuzz import q_lit, log  # noqa: E402  (fuzz.py: quoting and printing)

FEATURES = {
    'replicas': 'replica placements of some leaves (colojoin.add_replica)',
    'volatile': 'volatile functions in UPDATE and DELETE (random() < 2, always true)',
    'subqueries': 'subqueries in the WHERE and SET of UPDATE and DELETE, and in UPDATE ... FROM',
    'unaligned-joins': 'UPDATE ... FROM / DELETE ... USING a table not colocated with the target, or not on its key',
    'local-joins': 'UPDATE ... FROM / DELETE ... USING the local table loc',
    'savepoints': 'SAVEPOINT, ROLLBACK TO SAVEPOINT, RELEASE SAVEPOINT',
    'create-and-load': 'sequences that create a sharded table (create_shards) and write it',
    'copy': 'COPY FROM STDIN (text and csv)',
    'on-conflict': 'INSERT ... ON CONFLICT DO NOTHING / DO UPDATE',
    'bad-rows': 'rows that no partition takes (an error on both sides)',
    'multilevel': 'a range partition of r1 sub-partitioned by HASH (k2) over two nodes',
    'errors': 'statements that fail on both sides (division by zero on the nodes, duplicate keys), '
              'mostly between SAVEPOINT and ROLLBACK TO SAVEPOINT',
}

SERVERS = ('wf_n1', 'wf_n2', 'wf_n3')
COORD_SCHEMAS = ('wf_s', 'wf_l', 'wf_snap', 'wf_xs', 'wf_xl')
NODE_SCHEMAS = ('wf_s', 'wf_r', 'wf_snap', 'wf_xs')
COLS = ('k', 'k2', 'v', 's')
STATEMENT_TIMEOUT = '20s'

# text values with characters COPY and quoting must get right
TRICKY = ['tab\there', 'back\\slash', "it's", '', '\\N', 'NULL', 'a,b "q"', 'ünï ☃', 'line\nbreak']


# --------------------------------------------------------------------------
# a minimal client of the PostgreSQL wire protocol (version 3, simple
# query protocol, trust authentication as the test cluster has)
# --------------------------------------------------------------------------

class Result:
    """one statement's outcome: tag and rows (tuples of text or None), or
    error = (sqlstate, message, detail); notices are the WARNINGs"""

    def __init__(self):
        self.tag = None
        self.rows = []
        self.error = None
        self.notices = []

    def err_text(self):
        if not self.error:
            return None
        return '%s %s' % (self.error[0], self.error[1])

    def __repr__(self):
        if self.error:
            return 'ERROR %s' % self.err_text()
        return '%s %r' % (self.tag, self.rows[:5])


class ConnLost(Exception):
    pass


class Conn:
    def __init__(self, port, host=None, user=None, db=None, timeout=120):
        self.host = host or os.environ.get('PGHOST', '127.0.0.1')
        if self.host.startswith('/'):
            self.host = '127.0.0.1'
        self.user = user or os.environ.get('PGUSER', 'postgres')
        self.db = db or os.environ.get('PGDATABASE', 'colojoin_regress')
        self.sock = socket.create_connection((self.host, int(port)), timeout=timeout)
        self.buf = b''
        params = b''.join(k.encode() + b'\0' + v.encode() + b'\0' for k, v in
                          (('user', self.user), ('database', self.db),
                           ('application_name', 'write_fuzz'), ('client_encoding', 'UTF8')))
        params += b'\0'
        self.sock.sendall(struct.pack('!ii', len(params) + 8, 196608) + params)
        while True:
            t, body = self._read()
            if t == b'R':
                code = struct.unpack('!i', body[:4])[0]
                if code != 0:
                    raise ConnLost('authentication method %d is not supported (trust only)' % code)
            elif t == b'E':
                raise ConnLost('connecting: ' + self._fields(body).get('M', '?'))
            elif t == b'Z':
                break
        self.status = 'I'

    def _recv(self, n):
        while len(self.buf) < n:
            try:
                chunk = self.sock.recv(65536)
            except (socket.timeout, OSError) as e:
                raise ConnLost('connection: %s' % e)
            if not chunk:
                raise ConnLost('server closed the connection')
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _read(self):
        head = self._recv(5)
        t, n = head[:1], struct.unpack('!i', head[1:])[0]
        return t, self._recv(n - 4)

    def _send(self, t, body):
        try:
            self.sock.sendall(t + struct.pack('!i', len(body) + 4) + body)
        except OSError as e:
            raise ConnLost('connection: %s' % e)

    @staticmethod
    def _fields(body):
        out = {}
        for part in body.split(b'\0'):
            if part:
                out[chr(part[0])] = part[1:].decode('utf-8', 'replace')
        return out

    def execute(self, sql, copy_data=None):
        """runs sql (one statement, or several: the first error, else the
        last result); copy_data is the text of a COPY FROM STDIN"""
        self._send(b'Q', sql.encode() + b'\0')
        res = Result()
        cur = Result()
        while True:
            t, body = self._read()
            if t == b'T':
                cur = Result()
            elif t == b'D':
                n = struct.unpack('!h', body[:2])[0]
                pos = 2
                row = []
                for _ in range(n):
                    ln = struct.unpack('!i', body[pos:pos + 4])[0]
                    pos += 4
                    if ln < 0:
                        row.append(None)
                    else:
                        row.append(body[pos:pos + ln].decode('utf-8', 'replace'))
                        pos += ln
                cur.rows.append(tuple(row))
            elif t == b'C':
                cur.tag = body.rstrip(b'\0').decode()
                if res.error is None:
                    res.tag, res.rows = cur.tag, cur.rows
                cur = Result()
            elif t == b'I':
                if res.error is None:
                    res.tag, res.rows = 'EMPTY', []
            elif t == b'E':
                f = self._fields(body)
                if res.error is None:
                    res.error = (f.get('C', '?'), f.get('M', '?'), f.get('D'))
                    res.tag, res.rows = None, []
            elif t == b'N':
                f = self._fields(body)
                if f.get('S') in ('WARNING',):
                    res.notices.append('%s: %s' % (f.get('S'), f.get('M')))
            elif t == b'G':
                if copy_data is None:
                    self._send(b'f', b'no data\0')
                else:
                    data = copy_data.encode()
                    for i in range(0, len(data), 65536):
                        self._send(b'd', data[i:i + 65536])
                    self._send(b'c', b'')
            elif t == b'H':
                pass
            elif t == b'd' or t == b'c':
                pass
            elif t == b'Z':
                self.status = body.decode()
                return res

    def q(self, sql):
        """runs sql, raises on an error: the rows"""
        r = self.execute(sql)
        if r.error:
            raise RuntimeError('%s\n  in: %s' % (r.err_text(), sql[:600]))
        return r.rows

    def close(self):
        try:
            self._send(b'X', b'')
            self.sock.close()
        except Exception:
            pass


# --------------------------------------------------------------------------
# the world
# --------------------------------------------------------------------------

class Table:
    def __init__(self, name, kind):
        self.name = name
        self.kind = kind            # hash | list | range
        self.key = 'k'
        self.keycols = {'k'}        # columns of its partition keys, any level (an UPDATE never sets them)
        self.group = name           # tables with one group are colocated on their key
        self.nullable = True        # the key may be NULL
        self.unique = False         # remote unique index on (k), twin UNIQUE (k)
        self.check = None           # twin CHECK: the rows some partition takes
        self.key_values = None      # list/range: keys that route ([] = any int)
        self.bad_keys = []          # keys no partition takes (the twin CHECK refuses them)
        self.replicated = False
        self.deps = []              # tables its declaration names (colocate_with)
        self.decl = []              # (target, sql): 'c' or a node number
        self.desc = ''
        self.N = 0
        self.leaves = []            # after setup: dicts leaf, constraint, placements [(node, rel, is_replica)]


class World:
    def __init__(self, seed, feats=frozenset(FEATURES)):
        self.seed = seed
        rng = self.rng = random.Random(seed)
        self.Rk = rng.choice([40, 100, 200])
        self.tables = []
        self.data = []              # (table names, sql) run on the coordinator after the DDL
        self.post = []              # (table names, target, sql) after the data: replicas, indexes
        servers = list(SERVERS)
        rng.shuffle(servers)
        arr = "ARRAY[%s]" % ', '.join(q_lit(s) for s in servers)
        m1 = rng.choice([3, 4, 6])

        def plain_hash(name):
            return 'CREATE TABLE %s (k int, k2 int, v int, s text) PARTITION BY HASH (k)' % name

        # h1: create_shards over the three nodes; h2 colocated with it
        h1 = Table('h1', 'hash')
        h1.decl += [('c', plain_hash('wf_s.h1')),
                    ('c', "SELECT colojoin.create_shards('wf_s.h1', %s, %d)" % (arr, m1))]
        h1.desc = 'hash(k) create_shards %d partitions' % m1
        h1.m = m1
        self.tables.append(h1)
        h2 = Table('h2', 'hash')
        h2.decl += [('c', plain_hash('wf_s.h2')),
                    ('c', "SELECT colojoin.create_shards('wf_s.h2', NULL, colocate_with => 'wf_s.h1')")]
        h2.group, h2.deps, h2.desc = 'h1', ['h1'], 'hash(k) colocated with h1'
        self.tables.append(h2)
        # h3: PostgreSQL's declarations, colocated with h1 (same bounds and
        # nodes) or not
        if rng.random() < 0.75:
            h3 = Table('h3', 'hash')
            h3.decl.append(('c', plain_hash('wf_s.h3')))
            if rng.random() < 0.5:
                m3, nodes = m1, [int(servers[r % 3][-1]) for r in range(m1)]
                h3.group, h3.desc = 'h1', 'hash(k) declared by hand, colocated with h1'
            else:
                m3 = rng.choice([2, 3, 5, 8])
                nodes = [rng.randint(1, 3) for _ in range(m3)]
                h3.desc = 'hash(k) declared by hand, %d partitions, not colocated' % m3
            for r in range(m3):
                leaf = 'h3_p%d' % r
                h3.decl.append((nodes[r], 'CREATE TABLE wf_r.%s (k int, k2 int, v int, s text)' % leaf))
                h3.decl.append(('c', "CREATE FOREIGN TABLE wf_s.%s PARTITION OF wf_s.h3 FOR VALUES WITH "
                                "(MODULUS %d, REMAINDER %d) SERVER wf_n%d OPTIONS (schema_name 'wf_r', "
                                "table_name '%s')" % (leaf, m3, r, nodes[r], leaf)))
            self.tables.append(h3)
        # u1: a unique index on (k) of every remote leaf, for ON CONFLICT (k)
        u1 = Table('u1', 'hash')
        u1.unique, u1.nullable = True, False
        u1.decl.append(('c', 'CREATE TABLE wf_s.u1 (k int NOT NULL, k2 int, v int, s text) PARTITION BY HASH (k)'))
        if rng.random() < 0.5:
            u1.decl.append(('c', "SELECT colojoin.create_shards('wf_s.u1', NULL, colocate_with => 'wf_s.h1')"))
            u1.group, u1.deps, u1.desc = 'h1', ['h1'], 'hash(k) unique (k), colocated with h1'
        else:
            mu = rng.choice([2, 3, 5])
            u1.decl.append(('c', "SELECT colojoin.create_shards('wf_s.u1', %s, %d)" % (arr, mu)))
            u1.desc = 'hash(k) unique (k), %d partitions' % mu
        self.tables.append(u1)
        # l1: LIST (k2), by hand
        if rng.random() < 0.75:
            self.tables.append(self.list_table(rng))
        # r1: RANGE (k), by hand, one range sub-partitioned by HASH (k2)
        if rng.random() < 0.75:
            self.tables.append(self.range_table(rng, 'multilevel' in feats))
        # the rows
        a = lambda: rng.choice([1, 3, 7, 11, 13, 17, 31])
        for t in self.tables:
            t.N = rng.choice([0, 10, 40, 40, 100, 100, 250])
            nullk = 'CASE WHEN g %% %d = 0 THEN NULL ELSE {} END' % rng.choice([7, 11, 13])
            kb = '(g * %d + %d) %% %d' % (a(), rng.randrange(50), self.Rk)
            if t.unique:
                k = 'g * 3 + %d' % rng.randrange(3)     # distinct
            elif t.nullable and t.key == 'k':
                k = nullk.format(kb)
            else:
                k = kb
            if t.key == 'k2':
                vals = t.key_values
                k2 = '(ARRAY[%s]::int[])[1 + (g * %d) %% %d]' % (
                    ', '.join('NULL' if x is None else str(x) for x in vals), a(), len(vals))
            else:
                k2 = 'CASE WHEN g %% 9 = 0 THEN NULL ELSE (g * %d) %% 10 END' % a()
            v = 'CASE WHEN g %% 10 = 0 THEN NULL ELSE (g * %d + %d) %% 100 END' % (a(), rng.randrange(100))
            s = "CASE WHEN g %% 8 = 0 THEN NULL WHEN g %% 5 = 0 THEN (ARRAY[%s])[1 + g %% %d] ELSE 's' || (g %% 13) END" % (
                ', '.join(lit(x) for x in TRICKY), len(TRICKY))
            src = 'SELECT %s, %s, %s, %s FROM generate_series(1, %d) g' % (k, k2, v, s, t.N)
            for sch in ('wf_s', 'wf_l'):
                self.data.append(([t.name], 'INSERT INTO %s.%s (k, k2, v, s) %s' % (sch, t.name, src)))
        # replicas of some leaves (after the rows: add_replica copies them)
        for t in self.tables:
            if rng.random() < 0.4 and 'replicas' in feats:
                t.replicated = True
                t.replica_pick = random.Random(seed * 7 + len(t.name) * 13 + ord(t.name[0]))
        self.loc_rows = rng.choice([10, 30, 60])

    def list_table(self, rng):
        t = Table('l1', 'list')
        t.key = 'k2'
        t.keycols = {'k2'}
        vals = list(range(10))
        rng.shuffle(vals)
        unlisted = [vals.pop() for _ in range(rng.choice([0, 1, 2]))]
        nparts = rng.randint(2, 4)
        lists = [vals[i::nparts] for i in range(nparts)]
        null_in = rng.randrange(nparts) if rng.random() < 0.5 else None
        default = rng.random() < 0.4
        t.decl.append(('c', 'CREATE TABLE wf_s.l1 (k int, k2 int, v int, s text) PARTITION BY LIST (k2)'))
        bounds = []
        for i, l in enumerate(lists):
            items = [str(x) for x in l] + (['NULL'] if null_in == i else [])
            bounds.append(('l1_p%d' % i, 'FOR VALUES IN (%s)' % ', '.join(items)))
        if default:
            bounds.append(('l1_def', 'DEFAULT'))
        for leaf, bound in bounds:
            node = rng.randint(1, 3)
            t.decl.append((node, 'CREATE TABLE wf_r.%s (k int, k2 int, v int, s text)' % leaf))
            t.decl.append(('c', "CREATE FOREIGN TABLE wf_s.%s PARTITION OF wf_s.l1 %s SERVER wf_n%d "
                           "OPTIONS (schema_name 'wf_r', table_name '%s')" % (leaf, bound, node, leaf)))
        listed = [x for l in lists for x in l]
        t.key_values = listed + ([None] if null_in is not None or default else []) + \
            (unlisted if default else [])
        t.bad_keys = [] if default else unlisted + ([] if null_in is not None else [None])
        t.nullable = null_in is not None or default
        if not default:
            t.check = 'coalesce(k2 IN (%s)%s, false)' % (', '.join(str(x) for x in listed),
                                                        ' OR k2 IS NULL' if null_in is not None else '')
        t.desc = 'list(k2) %s%s%s%s' % ('; '.join(b for _, b in bounds), ', NULL listed' if null_in is not None else '',
                                        ', DEFAULT' if default else '',
                                        (', %s go nowhere' % unlisted) if unlisted and not default else '')
        return t

    def range_table(self, rng, multilevel):
        t = Table('r1', 'range')
        Rk = self.Rk
        nparts = rng.randint(2, 4)
        splits = sorted(rng.sample(range(5, Rk - 5), nparts - 1))
        lo = rng.choice(['MINVALUE', '0'])
        hi = rng.choice(['MAXVALUE', str(Rk)])
        edges = [lo] + [str(x) for x in splits] + [hi]
        default = rng.random() < 0.3
        sub = rng.randrange(nparts) if rng.random() < 0.5 else None
        if not multilevel:
            sub = None
        t.decl.append(('c', 'CREATE TABLE wf_s.r1 (k int, k2 int, v int, s text) PARTITION BY RANGE (k)'))
        for i in range(nparts):
            bound = 'FOR VALUES FROM (%s) TO (%s)' % (edges[i], edges[i + 1])
            leaf = 'r1_p%d' % i
            if i == sub:
                t.decl.append(('c', 'CREATE TABLE wf_s.%s PARTITION OF wf_s.r1 %s PARTITION BY HASH (k2)'
                               % (leaf, bound)))
                for r in range(2):
                    node = rng.randint(1, 3)
                    sl = '%s_%d' % (leaf, r)
                    t.decl.append((node, 'CREATE TABLE wf_r.%s (k int, k2 int, v int, s text)' % sl))
                    t.decl.append(('c', "CREATE FOREIGN TABLE wf_s.%s PARTITION OF wf_s.%s FOR VALUES WITH "
                                   "(MODULUS 2, REMAINDER %d) SERVER wf_n%d OPTIONS (schema_name 'wf_r', "
                                   "table_name '%s')" % (sl, leaf, r, node, sl)))
                continue
            node = rng.randint(1, 3)
            t.decl.append((node, 'CREATE TABLE wf_r.%s (k int, k2 int, v int, s text)' % leaf))
            t.decl.append(('c', "CREATE FOREIGN TABLE wf_s.%s PARTITION OF wf_s.r1 %s SERVER wf_n%d "
                           "OPTIONS (schema_name 'wf_r', table_name '%s')" % (leaf, bound, node, leaf)))
        if sub is not None:
            t.keycols = {'k', 'k2'}
        if default:
            t.decl.append((1, 'CREATE TABLE wf_r.r1_def (k int, k2 int, v int, s text)'))
            t.decl.append(('c', "CREATE FOREIGN TABLE wf_s.r1_def PARTITION OF wf_s.r1 DEFAULT SERVER wf_n1 "
                           "OPTIONS (schema_name 'wf_r', table_name 'r1_def')"))
        t.nullable = default
        t.key_values = []
        conds = []
        if lo != 'MINVALUE':
            conds.append('k >= %s' % lo)
        if hi != 'MAXVALUE':
            conds.append('k < %s' % hi)
        t.bad_keys = []
        if not default:
            t.check = 'coalesce(%s, false)' % ' AND '.join(['k IS NOT NULL'] + conds)
            t.bad_keys = [None] + ([-5] if lo != 'MINVALUE' else []) + ([Rk + 7] if hi != 'MAXVALUE' else [])
        t.desc = 'range(k) %s%s%s' % (' | '.join(edges), ', DEFAULT' if default else '',
                                      (', partition %d sub-partitioned by hash(k2)' % sub) if sub is not None else '')
        return t

    def table(self, name):
        for t in self.tables:
            if t.name == name:
                return t
        return None

    def twin_ddl(self, t):
        cons = []
        if t.unique:
            cons.append('UNIQUE (k)')
        if t.check:
            cons.append('CHECK (%s)' % t.check)
        return 'CREATE TABLE wf_l.%s (k int%s, k2 int, v int, s text%s)' % (
            t.name, ' NOT NULL' if t.unique else '', ''.join(', ' + c for c in cons))

    def loc_ddl(self):
        out = []
        for sch in ('wf_s', 'wf_l'):
            out.append('CREATE TABLE %s.loc (id int PRIMARY KEY, k2 int, w int)' % sch)
            out.append('INSERT INTO %s.loc SELECT g * 2, g %% 10, (g * 7) %% 50 FROM generate_series(0, %d) g'
                       % (sch, self.loc_rows))
        return out


# --------------------------------------------------------------------------
# setting a world up on the cluster, snapshots, reset
# --------------------------------------------------------------------------

class Cluster:
    """connections of the harness itself: the coordinator (admin: setup,
    checks, reset) and every node"""

    def __init__(self):
        self.port = os.environ.get('PGPORT', '5432')
        self.db = os.environ.get('PGDATABASE', 'colojoin_regress')
        self.node_ports = {}
        for i in (1, 2, 3):
            p = os.environ.get('CJ_NODE%d_PORT' % i)
            if not p:
                sys.exit('write_fuzz: CJ_NODE%d_PORT is not set (eval "$(test/cluster/cluster.sh env)")' % i)
            self.node_ports[i] = p
        self.admin = None
        self.nodes = {}
        self.connect()

    def connect(self):
        self.close()
        for _ in range(120):
            try:
                self.admin = Conn(self.port)
                break
            except (ConnLost, OSError):
                time.sleep(0.5)
        else:
            raise ConnLost('the coordinator does not answer')
        self.admin.q("SET client_min_messages = warning; SET statement_timeout = '60s'")
        for i, p in self.node_ports.items():
            self.nodes[i] = Conn(p)
            self.nodes[i].q("SET client_min_messages = warning; SET lock_timeout = '5s'")

    def close(self):
        for c in [self.admin] + list(self.nodes.values()):
            if c is not None:
                c.close()
        self.admin = None
        self.nodes = {}

    def session(self, schema):
        """a fresh coordinator session whose search_path is schema"""
        c = Conn(self.port)
        c.q("SET client_min_messages = warning; SET search_path = %s, public; "
            "SET statement_timeout = '%s'; SET lock_timeout = '10s'" % (schema, STATEMENT_TIMEOUT))
        return c

    def cleanup(self):
        # what an interrupted run left prepared on the nodes would hold locks
        if self.admin.q("SELECT count(*) FROM pg_extension WHERE extname = 'colojoin'")[0][0] != '0':
            self.recover()
        self.admin.q('SET client_min_messages = warning;' +
                     ''.join('DROP SCHEMA IF EXISTS %s CASCADE;' % s for s in COORD_SCHEMAS) +
                     ''.join('DROP SERVER IF EXISTS %s CASCADE;' % s for s in SERVERS))
        for c in self.nodes.values():
            c.q(''.join('DROP SCHEMA IF EXISTS %s CASCADE;' % s for s in NODE_SCHEMAS))

    def prepared_left(self):
        out = []
        for i, c in self.nodes.items():
            n = c.q("SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'colojoin%'")[0][0]
            if n != '0':
                out.append('%s prepared transaction(s) left on node wf_n%d' % (n, i))
        return out

    def recover(self):
        r = self.admin.execute('SELECT count(*) FROM colojoin.recover_prepared_transactions()')
        return r


def setup_world(cl, w):
    cl.cleanup()
    for i, c in cl.nodes.items():
        c.q('CREATE SCHEMA wf_r; CREATE SCHEMA wf_snap')
        for t in w.tables:
            for tgt, sql in t.decl:
                if tgt == i:
                    c.q(sql)
    a = cl.admin
    a.q('CREATE EXTENSION IF NOT EXISTS colojoin CASCADE')
    for s in ('wf_s', 'wf_l', 'wf_snap'):
        a.q('CREATE SCHEMA %s' % s)
    for i, p in cl.node_ports.items():
        a.q("CREATE SERVER wf_n%d FOREIGN DATA WRAPPER postgres_fdw OPTIONS "
            "(host '127.0.0.1', port '%s', dbname '%s')" % (i, p, cl.db))
        a.q('CREATE USER MAPPING FOR CURRENT_USER SERVER wf_n%d' % i)
    for t in w.tables:
        for tgt, sql in t.decl:
            if tgt == 'c':
                a.q(sql)
        a.q(w.twin_ddl(t))
    for sql in w.loc_ddl():
        a.q(sql)
    for names, sql in w.data:
        a.q(sql)
    # replicas: half the leaves of a replicated table, on another node
    for t in w.tables:
        t.leaves = leaves_of(cl, 'wf_s.' + t.name)
        if t.replicated:
            for lf in t.leaves:
                if t.replica_pick.random() < 0.6:
                    prim = lf['placements'][0][0]
                    other = t.replica_pick.choice([n for n in (1, 2, 3) if n != prim])
                    sql = "SELECT colojoin.add_replica('%s', 'wf_n%d')" % (lf['leaf'], other)
                    a.q(sql)
                    w.post.append(([t.name], 'c', sql))
            t.leaves = leaves_of(cl, 'wf_s.' + t.name)
    # the unique index of u1, on every placement
    for t in w.tables:
        if t.unique:
            for lf in t.leaves:
                for node, rel, rep in lf['placements']:
                    sql = 'CREATE UNIQUE INDEX ON %s (k)' % rel
                    cl.nodes[node].q(sql)
                    w.post.append(([t.name], node, sql))
    a.q('ANALYZE wf_s.loc; ANALYZE wf_l.loc')
    take_snapshots(cl, w)


def leaves_of(cl, parent):
    """the leaves of a sharded table: name, partition constraint, placements
    (node number, remote relation, is replica), the primary first"""
    rows = cl.admin.q(
        "SELECT s.leaf::text, s.node, s.remote_relation, s.is_replica, "
        "pg_get_partition_constraintdef(s.leaf) FROM colojoin.shards s "
        "WHERE s.table_name = %s::regclass ORDER BY s.leaf::text, s.is_replica, s.node" % q_lit(parent))
    out = collections.OrderedDict()
    for leaf, node, rel, rep, cons in rows:
        lf = out.setdefault(leaf, {'leaf': leaf, 'constraint': cons, 'placements': []})
        lf['placements'].append((int(node.replace('wf_n', '')), rel, rep == 't'))
    return list(out.values())


def take_snapshots(cl, w):
    w.snap = {i: [] for i in (1, 2, 3)}      # node -> [(remote relation, snapshot table)]
    n = 0
    for t in w.tables:
        for lf in t.leaves:
            for node, rel, rep in lf['placements']:
                n += 1
                snap = 'wf_snap.s%d' % n
                cl.nodes[node].q('CREATE TABLE %s AS SELECT * FROM %s' % (snap, rel))
                w.snap[node].append((rel, snap, t.name))
        cl.admin.q('CREATE TABLE wf_snap.%s AS SELECT * FROM wf_l.%s' % (t.name, t.name))


def reset_world(cl, w, names=None):
    """every placement and twin of the tables names (None: all) back to its
    rows after setup; None or why not"""
    tables = [t for t in w.tables if names is None or t.name in names]
    if not tables:
        return None
    for node, pairs in w.snap.items():
        pairs = [(r, s) for r, s, tn in pairs if names is None or tn in names]
        if not pairs:
            continue
        sql = ('BEGIN; TRUNCATE %s; ' % ', '.join(r for r, _ in pairs) +
               ''.join('INSERT INTO %s SELECT * FROM %s; ' % (r, s) for r, s in pairs) + 'COMMIT')
        r = cl.nodes[node].execute(sql)
        if r.error:
            cl.nodes[node].execute('ROLLBACK')
            return 'node wf_n%d: %s' % (node, r.err_text())
    sql = ('BEGIN; TRUNCATE %s; ' % ', '.join('wf_l.' + t.name for t in tables) +
           ''.join('INSERT INTO wf_l.%s SELECT * FROM wf_snap.%s; ' % (t.name, t.name) for t in tables) + 'COMMIT')
    r = cl.admin.execute(sql)
    if r.error:
        cl.admin.execute('ROLLBACK')
        return 'coordinator: ' + r.err_text()
    return None


# --------------------------------------------------------------------------
# write sequences
# --------------------------------------------------------------------------

class Stmt:
    """one statement of a sequence: the sharded side's text (with @X@ for
    the schema of a table created in the sequence), the twin side's when it
    differs, the data of a COPY FROM STDIN"""

    def __init__(self, sql, kind, twin=None, copy=None):
        self.sql = sql
        self.kind = kind
        self.twin = twin
        self.copy = copy

    def text(self, side):
        if side == 'l' and self.twin is not None:
            return self.twin
        return self.sql.replace('@X@', 'wf_xs' if side == 's' else 'wf_xl')

    def render(self, side='s'):
        out = self.text(side) + ';'
        if self.copy is not None:
            out += '\n' + self.copy + '\\.'
        return out


class Seq:
    def __init__(self, kind):
        self.kind = kind            # 'writes' or 'create-and-load'
        self.stmts = []
        self.new_table = None       # create-and-load: (sharded name, twin name)

    def copy(self, stmts):
        s = Seq(self.kind)
        s.stmts = stmts
        s.new_table = self.new_table
        return s

    def tables(self):
        names = set()
        for st in self.stmts:
            names |= set(re.findall(r'\b(h1|h2|h3|u1|l1|r1|loc)\b', st.sql))
        return names

    def written(self):
        """the world's tables its statements write"""
        names = set()
        for st in self.stmts:
            m = re.match(r'(?:INSERT INTO|UPDATE|DELETE FROM|COPY) (h1|h2|h3|u1|l1|r1)\b', st.sql)
            if m:
                names.add(m.group(1))
        return names

    def render(self, side='s'):
        return '\n'.join(st.render(side) for st in self.stmts)


def lit(x):
    """a SQL literal; control characters as E'' escapes, so that the
    printed statements stay on their lines"""
    if x is None:
        return 'NULL'
    if isinstance(x, int):
        return str(x)
    if any(c in x for c in '\t\n\r'):
        return "E'" + (x.replace('\\', '\\\\').replace("'", "''").replace('\t', '\\t')
                       .replace('\n', '\\n').replace('\r', '\\r')) + "'"
    return q_lit(x)


def copy_field(x, csv):
    if csv:
        if x is None:
            return ''
        x = str(x)
        if x == '' or any(c in x for c in ',"\n\r') or x != x.strip() or x == '\\.':
            return '"' + x.replace('"', '""') + '"'
        return x
    if x is None:
        return '\\N'
    return (str(x).replace('\\', '\\\\').replace('\t', '\\t').replace('\n', '\\n')
            .replace('\r', '\\r'))


class SeqGen:
    def __init__(self, w, rng, feats=frozenset(FEATURES)):
        self.w = w
        self.rng = rng
        self.f = feats
        self.fresh = 10000
        self.new = None

    def on(self, feat):
        return feat in self.f

    # -- values ---------------------------------------------------------------

    def key(self, t, routable=True):
        rng = self.rng
        if t.key == 'k2':
            if not routable and t.bad_keys:
                return rng.choice(t.bad_keys)
            return rng.choice(t.key_values)
        if not routable and t.bad_keys:
            return rng.choice(t.bad_keys)
        if t.unique:
            if rng.random() < 0.6:
                self.fresh += rng.randint(1, 9)
                return self.fresh
            return rng.randrange(3 * t.N + 10)
        if t.nullable and rng.random() < 0.1:
            return None
        return rng.randrange(self.w.Rk + 30) if t.kind == 'hash' else rng.randrange(self.w.Rk)

    def row(self, t, routable=True):
        rng = self.rng
        k = self.key(t, routable) if t.key == 'k' else rng.randrange(self.w.Rk + 30)
        k2 = self.key(t, routable) if t.key == 'k2' else (None if rng.random() < 0.1 else rng.randrange(10))
        v = None if rng.random() < 0.1 else rng.randrange(100)
        r = rng.random()
        s = None if r < 0.1 else rng.choice(TRICKY) if r < 0.35 else 's%d' % rng.randrange(13)
        return {'k': k, 'k2': k2, 'v': v, 's': s}

    def c(self, lo, hi):
        return self.rng.randint(lo, hi)

    # -- pieces -------------------------------------------------------------

    def pick_table(self):
        return self.rng.choice(self.w.tables + ([self.new] if self.new else []))

    def ref(self, t):
        return t.ref if getattr(t, 'ref', None) else t.name

    def source(self, t, colocated=None):
        """a table to read beside t: colocated with it on the key, or not"""
        rng = self.rng
        ts = self.w.tables + ([self.new] if self.new else [])
        same = [x for x in ts if x.group == t.group and x.key == t.key]
        other = [x for x in ts if x not in same]
        if colocated is None:
            colocated = rng.random() < 0.6
        if colocated or not other:
            return rng.choice(same)
        return rng.choice(other)

    def key_cond(self, t, a):
        rng = self.rng
        kc = '%s.%s' % (a, t.key)
        r = rng.random()
        if r < 0.4:
            return '%s = %s' % (kc, lit(self.key(t)))
        if r < 0.65:
            return '%s IN (%s)' % (kc, ', '.join(lit(self.key(t)) for _ in range(rng.randint(2, 4))))
        if r < 0.85:
            lo = self.c(0, self.w.Rk)
            return '%s BETWEEN %d AND %d' % (kc, lo, lo + self.c(3, 30))
        return '%s IS NULL' % kc

    def cond(self, t, a, allow_sub=True):
        """a condition on the rows of t (alias a)"""
        rng = self.rng
        r = rng.random()
        if r < 0.35:
            return self.key_cond(t, a)
        if r < 0.55:
            return '%s.v < %d' % (a, self.c(5, 60))
        if r < 0.62:
            return '%s.k2 = %d' % (a, self.c(0, 9))
        if r < 0.68:
            return "%s.s LIKE 's1%%'" % a
        if r < 0.73:
            return '%s.v IS NULL' % a
        if r < 0.8:
            return 'random() < 2' if self.on('volatile') else '%s.v <> %d' % (a, self.c(0, 99))
        if not allow_sub or not self.on('subqueries'):
            return '%s.v > %d' % (a, self.c(40, 95))
        src = self.source(t)
        if r < 0.9:
            return '%s.%s IN (SELECT x.%s FROM %s x WHERE x.v < %d)' % (a, t.key, src.key if src.key == t.key else t.key,
                                                                       self.ref(src), self.c(5, 50))
        return 'EXISTS (SELECT 1 FROM %s x WHERE x.%s = %s.%s AND x.v > %d)' % (
            self.ref(src), t.key, a, t.key, self.c(30, 90))

    def returning(self, a, extra=()):
        rng = self.rng
        if rng.random() > 0.3:
            return ''
        cols = rng.choice([['{a}k', '{a}k2', '{a}v', '{a}s'], ['{a}k', '{a}v'], ['{a}s'],
                           ['{a}k * 2 AS kk', '{a}v + 1 AS v1']])
        return ' RETURNING ' + ', '.join(c.format(a=a + '.' if a else '') for c in cols) + \
            ''.join(', ' + e for e in extra)

    # -- statements ---------------------------------------------------------

    def ins_values(self, t):
        rng = self.rng
        bad = t.bad_keys and rng.random() < 0.06 and self.on('bad-rows')
        rows = [self.row(t, routable=not (bad and i == 0)) for i in range(rng.randint(1, 5))]
        cols = list(COLS) if rng.random() < 0.7 else ([t.key, 'v'] if t.key == 'k2' else ['k', 'v', 's'])
        sql = 'INSERT INTO %s (%s) VALUES %s' % (self.ref(t), ', '.join(cols), ', '.join(
            '(%s)' % ', '.join(lit(r[c]) for c in cols) for r in rows))
        sql += self.on_conflict(t)
        return Stmt(sql + self.returning(None), 'INSERT VALUES')

    def on_conflict(self, t):
        rng = self.rng
        if not self.on('on-conflict'):
            return ''
        if t.unique and rng.random() < 0.6:
            r = rng.random()
            if r < 0.35:
                return ' ON CONFLICT (k) DO NOTHING'
            if r < 0.45:
                return ' ON CONFLICT DO NOTHING'
            tn = self.ref(t)
            return ' ON CONFLICT (k) DO UPDATE SET v = coalesce(%s.v, 0) + coalesce(excluded.v, 1), ' \
                   "s = excluded.s%s" % (tn, rng.choice(['', ' WHERE %s.v < 50' % tn, " WHERE excluded.s <> 'x'"]))
        if rng.random() < 0.08:
            return ' ON CONFLICT DO NOTHING'
        return ''

    def ins_select(self, t):
        rng = self.rng
        src = self.source(t)
        a = 'x'
        r = rng.random()
        filt = self.cond(src, a, allow_sub=rng.random() < 0.3)
        kexpr = '%s.%s' % (a, t.key)
        if src.key != t.key and rng.random() < 0.5:
            kexpr = '%s.%s' % (a, src.key)
        if r < 0.45:
            cols = {'k': 'x.k', 'k2': 'x.k2', 'v': 'x.v + 1', 's': 'x.s'}
            cols[t.key] = kexpr
            sel = 'SELECT %s FROM %s x WHERE %s' % (', '.join(cols[c] for c in COLS), self.ref(src), filt)
        elif r < 0.7:
            g = t.key
            other = [c for c in ('k', 'k2') if c != g][0]
            sel = ('SELECT x.%s, min(x.%s), (count(*) + coalesce(sum(x.v), 0)) %% 100, max(x.s) FROM %s x '
                   'WHERE %s GROUP BY x.%s' % (g, other, self.ref(src), filt, g))
            if g == 'k2':
                sel = 'SELECT k, k2, v, s FROM (SELECT min(x.k) AS k, x.k2, (count(*) + coalesce(sum(x.v), 0)) %% 100 AS v, ' \
                      'max(x.s) AS s FROM %s x WHERE %s GROUP BY x.k2) g' % (self.ref(src), filt)
        elif r < 0.85:
            b = self.source(src)
            sel = ('SELECT x.k, y.k2, x.v, y.s FROM %s x JOIN %s y ON y.%s = x.%s WHERE x.v < %d AND y.v < %d'
                   % (self.ref(src), self.ref(b), src.key, src.key, self.c(5, 40), self.c(5, 40)))
            if t.key == 'k2':
                sel = 'SELECT x.k, x.k2, x.v, y.s FROM %s x JOIN %s y ON y.k = x.k WHERE x.v < %d' % (
                    self.ref(src), self.ref(b), self.c(5, 40))
        else:
            sel = 'SELECT l.id, l.k2, l.w, %s FROM loc l WHERE l.w < %d' % (lit(rng.choice(TRICKY + ['loc'])),
                                                                          self.c(5, 40))
            if t.key == 'k2':
                sel = 'SELECT l.w, l.k2, l.id, NULL FROM loc l WHERE l.w < %d' % self.c(5, 40)
        conflict = ''
        if t.unique:
            # unique keys: one row per key, not NULL, many of them new
            off = rng.choice([0, 0, 1000, 5000])
            sel = 'SELECT DISTINCT ON (k) k + %d, k2, v, s FROM (%s) q(k, k2, v, s) WHERE k IS NOT NULL ORDER BY k, k2, v, s' % (off, sel)
            conflict = self.on_conflict(t)
            if not conflict and rng.random() < 0.7 and self.on('on-conflict'):
                conflict = ' ON CONFLICT (k) DO NOTHING'
        elif t.check and (rng.random() < 0.93 or not self.on('bad-rows')):
            sel = 'SELECT * FROM (%s) q(k, k2, v, s) WHERE %s' % (sel, t.check)
        else:
            conflict = self.on_conflict(t)
        sql = 'INSERT INTO %s (k, k2, v, s) %s%s' % (self.ref(t), sel, conflict)
        return Stmt(sql + self.returning(None), 'INSERT SELECT')

    def update(self, t):
        rng = self.rng
        a = 't'
        sets = []
        unique_src = None
        frm = ''
        conds = []
        r = rng.random()
        if r < 0.4:
            # FROM another table
            r2 = rng.random()
            if r2 >= 0.4 and r2 < 0.65 and not self.on('unaligned-joins'):
                r2 = 0.3
            if r2 >= 0.65 and r2 < 0.85 and not self.on('local-joins'):
                r2 = 0.3
            if r2 >= 0.85 and not self.on('subqueries'):
                r2 = 0.3
            if r2 < 0.4:
                src = self.source(t, colocated=True)
                frm = ' FROM %s x' % self.ref(src)
                conds.append('x.%s = t.%s' % (t.key, t.key))
                if src.unique:
                    unique_src = 'x.v'
            elif r2 < 0.65:
                src = self.source(t, colocated=False)
                frm = ' FROM %s x' % self.ref(src)
                conds.append(rng.choice(['x.k = t.k', 'x.k2 = t.k2', 'x.k = t.k2']))
                if src.unique and conds[-1] == 'x.k = t.k':
                    unique_src = 'x.v'
            elif r2 < 0.85:
                frm = ' FROM loc x'
                conds.append('x.id = t.%s' % rng.choice(['k', 'k', 'k2']))
                unique_src = 'x.w'
            else:
                src = self.source(t)
                frm = ' FROM (SELECT k, count(*) AS c FROM %s GROUP BY k) x' % self.ref(src)
                conds.append('x.k = t.k')
                unique_src = 'x.c::int'
            conds.append('x.%s < %d' % ('w' if 'loc' in frm else ('c' if 'count' in frm else 'v'), self.c(5, 60)))
        for _ in range(rng.randint(1, 2)):
            r = rng.random()
            if unique_src and r < 0.3:
                sets.append('v = %s' % unique_src)
            elif r < 0.45:
                sets.append('v = coalesce(t.v, 0) + %d' % self.c(1, 9))
            elif r < 0.55:
                sets.append('v = NULL')
            elif r < 0.68:
                sets.append("s = coalesce(t.s, '') || 'u'")
            elif r < 0.74 and 'k2' not in t.keycols:
                sets.append('k2 = t.k2 + 1')
            elif r < 0.8:
                sets.append('%s = t.%s' % (t.key, t.key))
            elif r < 0.88 and self.on('volatile'):
                sets.append('v = t.v + (random() < 2)::int')
            elif r < 0.88 or not self.on('subqueries'):
                sets.append('v = t.v * 2')
            else:
                src = self.source(t)
                sets.append('v = (SELECT count(*) FROM %s y WHERE y.%s = t.%s)::int' % (self.ref(src), t.key, t.key))
        seen = set()
        sets = [s for s in sets if not (s.split(' =')[0] in seen or seen.add(s.split(' =')[0]))]
        for _ in range(rng.choice([0, 1, 1, 2])):
            conds.append(self.cond(t, a))
        sql = 'UPDATE %s t SET %s%s%s' % (self.ref(t), ', '.join(sets), frm,
                                          (' WHERE ' + ' AND '.join(conds)) if conds else '')
        return Stmt(sql + self.returning('t', [unique_src] if unique_src and rng.random() < 0.5 else []), 'UPDATE')

    def delete(self, t):
        rng = self.rng
        conds = []
        using = ''
        r = rng.random()
        if r >= 0.35 and r < 0.45 and not self.on('local-joins'):
            r = 0.2
        if r < 0.35:
            aligned = not self.on('unaligned-joins')
            src = self.source(t, colocated=True if aligned else None)
            using = ' USING %s x' % self.ref(src)
            conds.append(rng.choice(['x.%s = t.%s' % (t.key, t.key)] * 3 + ([] if aligned else ['x.k2 = t.k2'])))
            conds.append('x.v < %d' % self.c(5, 40))
        elif r < 0.45:
            using = ' USING loc x'
            conds.append('x.id = t.k AND x.w < %d' % self.c(5, 30))
        conds.append(self.cond(t, 't'))
        if rng.random() < 0.3:
            conds.append(self.cond(t, 't'))
        sql = 'DELETE FROM %s t%s WHERE %s' % (self.ref(t), using, ' AND '.join(conds))
        return Stmt(sql + self.returning('t'), 'DELETE')

    def copy_from(self, t):
        rng = self.rng
        csv = rng.random() < 0.4
        bad = t.bad_keys and rng.random() < 0.06 and self.on('bad-rows')
        rows = [self.row(t, routable=not (bad and i == 0)) for i in range(rng.randint(1, 8))]
        cols = list(COLS) if rng.random() < 0.7 else ([t.key, 'v', 's'] if t.key == 'k2' else ['k', 'v', 's'])
        sep = ',' if csv else '\t'
        data = ''.join(sep.join(copy_field(r[c], csv) for c in cols) + '\n' for r in rows)
        sql = 'COPY %s (%s) FROM STDIN%s' % (self.ref(t), ', '.join(cols), ' (FORMAT csv)' if csv else '')
        return Stmt(sql, 'COPY', copy=data)

    def read(self):
        rng = self.rng
        t = self.pick_table()
        r = rng.random()
        if r < 0.3:
            sql = 'SELECT count(*), count(k), sum(v), count(s), min(k2) FROM %s' % self.ref(t)
        elif r < 0.5:
            b = self.source(t)
            sql = 'SELECT count(*), sum(a.v), sum(b.v) FROM %s a JOIN %s b ON b.%s = a.%s' % (
                self.ref(t), self.ref(b), t.key, t.key)
        elif r < 0.6:
            b = self.source(t, colocated=False)
            sql = 'SELECT count(*), sum(b.v) FROM %s a JOIN %s b ON b.k2 = a.k2 WHERE a.v < %d' % (
                self.ref(t), self.ref(b), self.c(5, 40))
        elif r < 0.7:
            sql = 'SELECT k2, count(*), sum(v) FROM %s GROUP BY k2' % self.ref(t)
        elif r < 0.82:
            sql = 'SELECT k, k2, v, s FROM %s t WHERE %s' % (self.ref(t), self.key_cond(t, 't'))
        elif r < 0.92:
            b = self.source(t)
            sql = 'SELECT count(*) FROM %s t WHERE t.%s IN (SELECT x.%s FROM %s x WHERE x.v < %d)' % (
                self.ref(t), t.key, t.key, self.ref(b), self.c(5, 50))
        else:
            sql = 'SELECT count(*), sum(l.w) FROM %s a LEFT JOIN loc l ON l.id = a.k WHERE a.v < %d' % (
                self.ref(t), self.c(10, 80))
        return Stmt(sql, 'SELECT')

    def failing(self):
        """a statement that fails on both sides when its table has rows
        (its error raised on the nodes, on the sharded side)"""
        rng = self.rng
        t = self.pick_table()
        tn = self.ref(t)
        r = rng.random()
        if r < 0.3:
            sql = 'SELECT count(*) FROM %s t WHERE 1 / (t.v - t.v) = 1' % tn
            kind = 'SELECT'
        elif r < 0.5:
            sql = 'UPDATE %s t SET v = t.v / 0 WHERE %s' % (tn, self.cond(t, 't', allow_sub=False))
            kind = 'UPDATE'
        elif r < 0.65:
            sql = 'DELETE FROM %s t WHERE 1 / (t.v - t.v) = 1' % tn
            kind = 'DELETE'
        elif r < 0.8:
            src = self.source(t)
            sql = 'INSERT INTO %s (k, k2, v, s) SELECT x.k, x.k2, x.v / 0, x.s FROM %s x' % (tn, self.ref(src))
            kind = 'INSERT SELECT'
        else:
            self.fresh += 3
            sql = 'INSERT INTO u1 (k, k2, v, s) VALUES (%d, 1, 1, %s), (%d, 2, 2, %s)' % (
                self.fresh, lit('dup'), self.fresh, lit('dup'))
            kind = 'INSERT VALUES'
        return Stmt(sql, kind)

    def write(self):
        rng = self.rng
        t = self.pick_table()
        r = rng.random()
        if r < 0.2:
            return self.ins_values(t)
        if r < 0.4:
            return self.ins_select(t)
        if r < 0.65:
            return self.update(t)
        if r < 0.82 or not self.on('copy'):
            return self.delete(t)
        return self.copy_from(t)

    # -- sequences ----------------------------------------------------------

    def gen(self):
        rng = self.rng
        self.new = None
        seq = Seq('writes')
        seq.stmts.append(Stmt('BEGIN', 'BEGIN'))
        if rng.random() < 0.1 and self.on('create-and-load'):
            self.create_and_load(seq)
        n = rng.randint(2, 8)
        sps = []
        spn = 0
        for i in range(n):
            r = rng.random()
            if r < 0.28 and not self.on('savepoints'):
                r = 0.3 + r * 2.5
            if r < 0.14 or (r < 0.2 and not sps):
                spn += 1
                sps.append('s%d' % spn)
                seq.stmts.append(Stmt('SAVEPOINT s%d' % spn, 'SAVEPOINT'))
            elif r < 0.25 and sps:
                j = rng.randrange(len(sps))
                seq.stmts.append(Stmt('ROLLBACK TO SAVEPOINT %s' % sps[j], 'ROLLBACK TO'))
                del sps[j + 1:]
            elif r < 0.28 and sps:
                j = rng.randrange(len(sps))
                seq.stmts.append(Stmt('RELEASE SAVEPOINT %s' % sps[j], 'RELEASE'))
                del sps[j:]
            elif r < 0.36 and self.on('errors'):
                if self.on('savepoints') and rng.random() < 0.85:
                    spn += 1
                    seq.stmts.append(Stmt('SAVEPOINT s%d' % spn, 'SAVEPOINT'))
                    seq.stmts.append(self.failing())
                    seq.stmts.append(Stmt('ROLLBACK TO SAVEPOINT s%d' % spn, 'ROLLBACK TO'))
                    sps.append('s%d' % spn)
                else:
                    seq.stmts.append(self.failing())
            elif r < 0.5:
                seq.stmts.append(self.read())
            else:
                seq.stmts.append(self.write())
        seq.stmts.append(Stmt('COMMIT', 'COMMIT') if rng.random() < 0.75 else Stmt('ROLLBACK', 'ROLLBACK'))
        return seq

    def create_and_load(self, seq):
        """the sequence creates a sharded table, in a new schema or not,
        and the statements that follow write it too"""
        rng = self.rng
        seq.kind = 'create-and-load'
        h1 = self.w.table('h1')
        t = Table('tn', 'hash')
        if rng.random() < 0.5:
            seq.stmts.append(Stmt('CREATE SCHEMA @X@', 'CREATE SCHEMA'))
            t.ref = '@X@.tn'
            seq.new_table = ('wf_xs.tn', 'wf_xl.tn')
        else:
            seq.new_table = ('wf_s.tn', 'wf_l.tn')
        seq.stmts.append(Stmt('CREATE TABLE %s (k int, k2 int, v int, s text) PARTITION BY HASH (k)' % self.ref(t),
                              'CREATE TABLE', twin='CREATE TABLE %s (k int, k2 int, v int, s text)'
                              % self.ref(t).replace('@X@', 'wf_xl')))
        # the twin side's stand-in returns what create_shards returns, and
        # fails as it does when the table is not there
        twin = "SELECT %%d FROM pg_class WHERE oid = '%s'::regclass" % self.ref(t).replace('@X@', 'wf_xl')
        if rng.random() < 0.4:
            seq.stmts.append(Stmt("SELECT colojoin.create_shards('%s', NULL, colocate_with => 'h1')" % self.ref(t),
                                  'create_shards', twin=twin % h1.m))
            t.group = 'h1'
        else:
            m = rng.choice([2, 3, 4])
            seq.stmts.append(Stmt("SELECT colojoin.create_shards('%s', ARRAY['wf_n1', 'wf_n2', 'wf_n3'], %d)"
                                  % (self.ref(t), m), 'create_shards', twin=twin % m))
            t.group = 'tn'
        self.new = t
        # loaded at once
        st = rng.choice([self.ins_values, self.ins_select] + ([self.copy_from] if self.on('copy') else []))(t)
        seq.stmts.append(st)


# --------------------------------------------------------------------------
# running a sequence on both sides, and the checks
# --------------------------------------------------------------------------

def normalize(msg):
    """an error message without the names and numbers that vary"""
    s = re.sub(r'"[^"]*"', '"X"', msg)
    s = re.sub(r'\bleaf .*\bhas replica placements|\bleaves .*\bhave replica placements',
               'leaf ... has replica placements', s)
    s = re.sub(r'\b\d+\b', 'N', s)
    return s[:140]


class Failure:
    def __init__(self, sig, text, index=None, kind=None):
        self.sig = sig              # the class: the error message (names and numbers left out), or what differs
        self.text = text
        self.index = index          # the statement to blame, if one is
        self.key = sig + (' [%s]' % kind if kind else '')   # what must stay the same while reducing


def run_side(conn, seq, side):
    """each statement's Result; a lost connection ends the list with a
    CRASH result"""
    out = []
    for st in seq.stmts:
        try:
            r = conn.execute(st.text(side), st.copy)
        except ConnLost as e:
            r = Result()
            r.error = ('CRASH', str(e), None)
            out.append(r)
            return out
        out.append(r)
    if conn.status != 'I':
        conn.execute('ROLLBACK')
    return out


def show_rows(rows, n=4):
    return ', '.join('(%s)' % ', '.join('NULL' if x is None else repr(x) for x in r) for r in rows[:n]) + \
        (' ...' if len(rows) > n else '')


def multiset_diff(a, b):
    ca, cb = collections.Counter(a), collections.Counter(b)
    return sorted((ca - cb).elements(), key=repr), sorted((cb - ca).elements(), key=repr)


def compare_statements(seq, rs, rl):
    for i, st in enumerate(seq.stmts):
        a = rs[i] if i < len(rs) else None
        b = rl[i] if i < len(rl) else None
        if a is None:
            break
        where = 'statement %d (%s)' % (i + 1, st.kind)
        if a.error and a.error[0] == 'CRASH':
            return Failure('CRASH', '%s: the sharded session was lost: %s' % (where, a.error[1]), i, st.kind)
        if b is None:
            break
        if a.error and b.error:
            continue
        if a.error:
            return Failure('sharded-only error: %s %s' % (a.error[0], normalize(a.error[1])),
                           '%s fails on the sharded side only: ERROR %s%s\n  (twin: %s)' % (
                               where, a.err_text(), ('\n  DETAIL: ' + a.error[2]) if a.error[2] else '',
                               b.tag), i, st.kind)
        if b.error:
            return Failure('twin-only error (the sharded side accepts): %s %s' % (b.error[0], normalize(b.error[1])),
                           '%s fails on the twin side only: ERROR %s\n  (sharded: %s)' % (where, b.err_text(), a.tag),
                           i, st.kind)
        if a.tag != b.tag:
            return Failure('command tags differ (%s)' % st.kind,
                           '%s: sharded says %s, twin says %s' % (where, a.tag, b.tag), i, st.kind)
        only_a, only_b = multiset_diff(a.rows, b.rows)
        if only_a or only_b:
            return Failure('rows differ (%s)' % st.kind,
                           '%s returns different rows: %d sharded, %d twin; only sharded: %s; only twin: %s' % (
                               where, len(a.rows), len(b.rows), show_rows(only_a), show_rows(only_b)), i, st.kind)
    return None


def check_state(cl, w, seq):
    """after the transaction: every table against its twin, read on the
    coordinator; every leaf's placements read on their nodes; nothing left
    prepared.  A list of Failures."""
    out = []
    a = cl.admin
    tables = [(t.name, 'wf_s.' + t.name, 'wf_l.' + t.name, t.leaves) for t in w.tables]
    if seq.new_table:
        s_name, l_name = seq.new_table
        s_there = a.q('SELECT to_regclass(%s) IS NOT NULL' % q_lit(s_name))[0][0] == 't'
        l_there = a.q('SELECT to_regclass(%s) IS NOT NULL' % q_lit(l_name))[0][0] == 't'
        if s_there != l_there:
            out.append(Failure('created table exists on one side only',
                               '%s %s, but %s %s' % (s_name, 'exists' if s_there else 'does not exist',
                                                     l_name, 'exists' if l_there else 'does not exist')))
        elif s_there:
            tables.append(('tn', s_name, l_name, leaves_of(cl, s_name)))
        # a rolled back create_shards leaves nothing on the nodes
        if not s_there:
            for i, c in cl.nodes.items():
                left = c.q("SELECT string_agg(n.nspname || '.' || c.relname, ', ') FROM pg_class c JOIN pg_namespace n "
                           "ON n.oid = c.relnamespace WHERE n.nspname IN ('wf_s', 'wf_xs') AND c.relname LIKE 'tn%'")[0][0]
                if left:
                    out.append(Failure('remote tables left on a node by a create_shards rolled back',
                                       'node wf_n%d still has %s' % (i, left)))
    node_sql = {1: [], 2: [], 3: []}
    for ti, (name, s_name, l_name, leaves) in enumerate(tables):
        rs = a.execute('SELECT k, k2, v, s FROM %s' % s_name)
        rl = a.q('SELECT k, k2, v, s FROM %s' % l_name)
        if rs.error:
            out.append(Failure('reading a table after the transaction fails: %s' % normalize(rs.err_text()),
                               'SELECT k, k2, v, s FROM %s: ERROR %s' % (s_name, rs.err_text())))
        else:
            only_s, only_l = multiset_diff(rs.rows, rl)
            if only_s or only_l:
                out.append(Failure('table content differs from the twin after %s' % seq.stmts[-1].kind,
                                   '%s has %d rows, its twin %d; only sharded: %s; only twin: %s' % (
                                       s_name, len(rs.rows), len(rl), show_rows(only_s), show_rows(only_l))))
        for li, lf in enumerate(leaves):
            for pi, (node, rel, rep) in enumerate(lf['placements']):
                node_sql[node].append('SELECT %d, %d, %d, k, k2, v, s FROM %s' % (ti, li, pi, rel))
    placed = collections.defaultdict(list)      # (table, leaf, placement) -> rows
    for node, parts in node_sql.items():
        if parts:
            for row in cl.nodes[node].q(' UNION ALL '.join(parts)):
                placed[(int(row[0]), int(row[1]), int(row[2]))].append(row[3:])
    for ti, (name, s_name, l_name, leaves) in enumerate(tables):
        if not leaves:
            continue
        case = 'CASE %s END' % ' '.join('WHEN coalesce(%s, false) THEN %d' % (lf['constraint'], li)
                                        for li, lf in enumerate(leaves))
        twin_by_leaf = collections.defaultdict(list)
        for row in a.q('SELECT %s, k, k2, v, s FROM %s' % (case, l_name)):
            twin_by_leaf[row[0]].append(row[1:])
        if twin_by_leaf.get(None):
            out.append(Failure('twin rows that no leaf takes', '%s: %s' % (l_name, show_rows(twin_by_leaf[None]))))
        for li, lf in enumerate(leaves):
            prim = placed.get((ti, li, 0), [])
            want = twin_by_leaf.get(str(li), [])
            node0 = lf['placements'][0][0]
            only_p, only_t = multiset_diff(prim, want)
            if only_p or only_t:
                out.append(Failure('primary placement differs from the twin\'s rows of that partition',
                                   '%s on wf_n%d (%s) has %d rows, the twin %d for it; only on the node: %s; '
                                   'only in the twin: %s' % (lf['leaf'], node0, lf['placements'][0][1], len(prim),
                                                             len(want), show_rows(only_p), show_rows(only_t))))
            for pi, (node, rel, rep) in enumerate(lf['placements'][1:], 1):
                rows = placed.get((ti, li, pi), [])
                only_r, only_p = multiset_diff(rows, prim)
                if only_r or only_p:
                    out.append(Failure('replica placement differs from its primary',
                                       'replica of %s on wf_n%d has %d rows, the primary on wf_n%d %d; only on '
                                       'the replica: %s; only on the primary: %s' % (
                                           lf['leaf'], node, len(rows), node0, len(prim), show_rows(only_r),
                                           show_rows(only_p))))
    for p in cl.prepared_left():
        out.append(Failure('prepared transaction left on a node', p))
    return out


def drop_new_table(cl, seq):
    if not seq.new_table:
        return
    s_name, l_name = seq.new_table
    a = cl.admin
    a.execute('DROP TABLE IF EXISTS %s, %s' % (s_name, l_name))
    a.execute('DROP SCHEMA IF EXISTS wf_xs CASCADE; DROP SCHEMA IF EXISTS wf_xl CASCADE')
    for c in cl.nodes.values():
        left = c.q("SELECT string_agg(n.nspname || '.' || c.relname, ', ') FROM pg_class c JOIN pg_namespace n "
                   "ON n.oid = c.relnamespace WHERE n.nspname = 'wf_s' AND c.relname LIKE 'tn\\_p%' "
                   "AND c.relkind = 'r'")[0][0]
        if left:
            c.execute('DROP TABLE IF EXISTS %s' % left)
        c.execute('DROP SCHEMA IF EXISTS wf_xs CASCADE')


class Runner:
    """runs sequences on a sharded and a twin session, checks, and puts the
    world back when a sequence changed it"""

    def __init__(self, cl, w, per_session):
        self.cl = cl
        self.w = w
        self.per_session = per_session
        self.ss = self.sl = None
        self.used = 0
        self.dirty = set()          # tables to put back before the next sequence (None: all)
        self.history = []           # the sequences of the current sharded session

    def close_sessions(self):
        for c in (self.ss, self.sl):
            if c is not None:
                c.close()
        self.ss = self.sl = None
        self.history = []

    def sessions(self, fresh):
        if fresh or self.ss is None or self.used >= self.per_session:
            self.close_sessions()
            self.ss = self.cl.session('wf_s')
            self.sl = self.cl.session('wf_l')
            self.used = 0
        self.used += 1

    def restore(self):
        if self.dirty is not None and not self.dirty:
            return
        err = reset_world(self.cl, self.w, self.dirty)
        if err:
            # a session that still holds locks on the nodes, or a prepared
            # transaction: end them, then again
            self.close_sessions()
            self.cl.recover()
            err = reset_world(self.cl, self.w)
            if err:
                raise RuntimeError('cannot put the world back: ' + err)
        self.dirty = set()

    def run(self, seq, fresh=False):
        """(failure or None, sharded results, twin results)"""
        self.restore()
        try:
            self.sessions(fresh)
            rs = run_side(self.ss, seq, 's')
            rl = run_side(self.sl, seq, 'l')
        except ConnLost as e:
            rs, rl = [], []
            f = Failure('CRASH', 'a session was lost: %s' % e)
            self.after_crash()
            return f, rs, rl
        self.history.append(seq)
        fail = compare_statements(seq, rs, rl)
        if fail and fail.sig.startswith('CRASH'):
            self.after_crash()
            return fail, rs, rl
        try:
            state = check_state(self.cl, self.w, seq)
        except (ConnLost, RuntimeError) as e:
            state = [Failure('CRASH while checking', str(e))]
            self.after_crash()
        committed = rs and rs[-1].tag == 'COMMIT'
        if fail is None and state:
            fail = state[0]
            fail.text += ''.join('\n  also: ' + f.text for f in state[1:4])
        elif fail is not None and fail.index is not None and fail.index < len(seq.stmts) - 1:
            # how each side's transaction ended (the differences after it
            # follow from the failure)
            end = lambda r: ('ERROR ' + r[-1].err_text()) if r and r[-1].error else (r[-1].tag if r else '-')
            fail.text += '\n  the transaction ended with: sharded %s, twin %s' % (end(rs), end(rl))
        if fail is None:
            if committed and self.dirty is not None:
                self.dirty |= seq.written()
        else:
            warnings = [w for r in rs for w in r.notices]
            if warnings:
                fail.text += '\n  the sharded side warned: ' + '; '.join(warnings[:3])
            self.dirty = None
            if self.cl.prepared_left():
                self.cl.recover()
            self.close_sessions()
        try:
            drop_new_table(self.cl, seq)
        except (ConnLost, RuntimeError):
            self.after_crash()
        return fail, rs, rl

    def after_crash(self):
        self.ss = self.sl = None
        self.history = []
        self.cl.connect()
        self.dirty = None


# --------------------------------------------------------------------------
# reduction and reports
# --------------------------------------------------------------------------

def candidates(seq):
    """shorter sequences, the shortest first: runs of statements left out
    (halves, quarters, ... single ones; never BEGIN and the end), a
    savepoint with its ROLLBACK TO / RELEASE, COMMIT made ROLLBACK"""
    body = seq.stmts
    out = []
    last = len(body) - 1
    inner = last - 1
    size = inner // 2
    while size >= 1:
        for start in range(1, last - size + 1, size):
            out.append(seq.copy(body[:start] + body[start + size:]))
        size = size // 2 if size > 1 else 0
    names = sorted(set(m for st in body for m in re.findall(r'^SAVEPOINT (s\d+)$', st.sql)))
    for sp in names:
        keep = [st for st in body if not re.search(r'\b%s$' % sp, st.sql)]
        out.append(seq.copy(keep))
    if body[last].sql == 'COMMIT':
        out.append(seq.copy(body[:last] + [Stmt('ROLLBACK', 'ROLLBACK')]))
    return out


def reduce_seq(runner, seq, fail, budget_end):
    tries = 0
    progress = True
    while progress and time.time() < budget_end:
        progress = False
        for c in candidates(seq):
            if time.time() >= budget_end:
                break
            tries += 1
            f, rs, rl = runner.run(c, fresh=True)
            if f is not None and f.key == fail.key:
                seq, fail = c, f
                progress = True
                break
    return seq, fail, tries


def needed(w, seq):
    """the world's tables seq needs: those it names, what their declarations
    name, and h1 when it creates a table (create_shards colocates with it,
    and h1's create_shards made schema wf_s on the nodes)"""
    names = seq.tables() | ({'h1'} if seq.new_table else set())
    for t in w.tables:
        if t.name in names:
            names |= set(t.deps)
    return names


def declarations(cl, w, seq):
    names = needed(w, seq)
    out = ['-- servers wf_n1..wf_n3: postgres_fdw, host 127.0.0.1, ports %s, dbname %s, user mappings for '
           'CURRENT_USER' % (', '.join(cl.node_ports[i] for i in (1, 2, 3)), cl.db),
           '-- schemas wf_s (sharded), wf_l (twins) on the coordinator, wf_r on every node']
    for t in w.tables:
        if t.name not in names:
            continue
        out.append('-- %s: %s, %d rows%s' % (t.name, t.desc, t.N, ', replicas' if t.replicated else ''))
        for tgt, sql in t.decl:
            out.append(('-- on node wf_n%d: ' % tgt if tgt != 'c' else '') + sql + ';')
        out.append(w.twin_ddl(t) + ';')
    for names_, sql in w.data:
        if set(names_) & names:
            out.append(sql + ';')
    for names_, tgt, sql in w.post:
        if set(names_) & names:
            out.append(('-- on node wf_n%d: ' % tgt if tgt != 'c' else '') + sql + ';')
    if 'loc' in names:
        out += [s + ';' for s in w.loc_ddl()]
    return '\n'.join(out)


def repro_script(cl, w, seq, fail, title):
    """a psql script that declares what seq needs on the nodes and the
    coordinator, then runs seq on the sharded side"""
    names = needed(w, seq)
    tables = [t for t in w.tables if t.name in names]
    host = '127.0.0.1'
    out = ['-- %s' % title, '-- expected: %s' % fail.text.splitlines()[0],
           '-- run with: psql -X -d %s -h %s -p %s -f THIS_FILE' % (cl.db, host, cl.port),
           '\\set ON_ERROR_STOP 0', 'SET client_min_messages = warning;']

    def at(node):
        out.append('\\c - - %s %s' % (host, cl.port if node == 'c' else cl.node_ports[node]))
        out.append('SET client_min_messages = warning;')
    for i in (1, 2, 3):
        at(i)
        out.append('DROP SCHEMA IF EXISTS %s CASCADE;' % ', '.join(NODE_SCHEMAS))
        out.append('CREATE SCHEMA wf_r;')
        out += [sql + ';' for t in tables for tgt, sql in t.decl if tgt == i]
    at('c')
    out.append('DROP SCHEMA IF EXISTS %s CASCADE;' % ', '.join(COORD_SCHEMAS))
    out.append('DROP SERVER IF EXISTS %s CASCADE;' % ', '.join(SERVERS))
    out.append('CREATE EXTENSION IF NOT EXISTS colojoin CASCADE;')
    out.append('CREATE SCHEMA wf_s; CREATE SCHEMA wf_l;')
    for i in (1, 2, 3):
        out.append("CREATE SERVER wf_n%d FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '%s', port '%s', "
                   "dbname '%s');" % (i, host, cl.node_ports[i], cl.db))
        out.append('CREATE USER MAPPING FOR CURRENT_USER SERVER wf_n%d;' % i)
    for t in tables:
        out += [sql + ';' for tgt, sql in t.decl if tgt == 'c']
        out.append(w.twin_ddl(t) + ';')
    if 'loc' in names:
        out += [x + ';' for x in w.loc_ddl()]
    out += [sql + ';' for names_, sql in w.data if set(names_) & names]
    cur = 'c'
    for names_, tgt, sql in w.post:
        if set(names_) & names:
            if tgt != cur:
                at(tgt)
                cur = tgt
            out.append(sql + ';')
    # a session of its own, as the fuzzer's
    at('c')
    out.append('\\echo -- the sequence (sharded side), on a new session')
    out.append('SET search_path = wf_s, public;')
    out.append(seq.render('s'))
    if seq.render('l') != seq.render('s'):
        out.append('-- the twin side runs with search_path wf_l, public:')
        out += ['-- ' + l for l in seq.render('l').splitlines()]
    return '\n'.join(out) + '\n'


def indent(text, pre='    '):
    return '\n'.join(pre + l for l in text.splitlines())


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description='colojoin write-sequence fuzzer')
    ap.add_argument('--seed', type=int, required=True)
    ap.add_argument('--count', type=int, required=True, help='sequences to run')
    ap.add_argument('--per-world', type=int, default=60, help='sequences per set of tables (default 60)')
    ap.add_argument('--per-session', type=int, default=4,
                    help='sequences run on one coordinator session before a fresh one (default 4)')
    ap.add_argument('--reduce-budget', type=float, default=float(os.environ.get('WRITE_FUZZ_REDUCE_BUDGET', 20)),
                    help='seconds spent reducing failures in all (default 20)')
    ap.add_argument('--keep', action='store_true', help='leave the tables in place at the end')
    ap.add_argument('--repro-dir', help='write a psql script reproducing each reduced failure here')
    ap.add_argument('--show', action='store_true', help='print the worlds and sequences, run nothing')
    ap.add_argument('-v', '--verbose', action='store_true')
    for f, h in FEATURES.items():
        ap.add_argument('--no-' + f, action='append_const', dest='exclude', const=f, help='leave out: ' + h)
    args = ap.parse_args()
    excl = set(args.exclude or [])
    for f in os.environ.get('WRITE_FUZZ_EXCLUDE', '').replace(' ', '').split(','):
        if f:
            if f not in FEATURES:
                sys.exit('write_fuzz: WRITE_FUZZ_EXCLUDE names an unknown feature %r' % f)
            excl.add(f)
    feats = frozenset(set(FEATURES) - excl)
    if excl:
        log('write_fuzz: leaving out %s' % ', '.join(sorted(excl)))

    t0 = time.time()
    cl = None if args.show else Cluster()
    had_ext = set()
    if cl:
        had_ext = set(x[0] for x in cl.admin.q("SELECT extname FROM pg_extension "
                                                "WHERE extname IN ('colojoin', 'postgres_fdw')"))
    total = nfail = 0
    classes = collections.OrderedDict()     # signature -> [count, reduced report or None]
    budget_end = time.time() + args.reduce_budget
    world_no = 0
    kinds = collections.Counter()
    both_err = collections.Counter()
    while total < args.count:
        wseed = args.seed * 1000 + world_no
        world_no += 1
        w = World(wseed, feats)
        gen = SeqGen(w, random.Random(wseed * 7 + 1), feats)
        n = min(args.per_world, args.count - total)
        seqs = [gen.gen() for _ in range(n)]
        if args.show:
            for t in w.tables:
                log('-- %s: %s, %d rows%s' % (t.name, t.desc, t.N, ', replicas' if t.replicated else ''))
            for s in seqs:
                log(s.render() + '\n')
            total += n
            continue
        tw = time.time()
        try:
            setup_world(cl, w)
        except (RuntimeError, ConnLost) as e:
            nfail += 1
            total += n
            log('\nFAILURE (setup) seed %d world %d: %s' % (args.seed, wseed, e))
            classes.setdefault('SETUP ' + normalize(str(e).splitlines()[0]), [0, None])[0] += 1
            cl.connect()
            continue
        if args.verbose:
            log('write_fuzz: world %d (setup %.1fs): %s' % (wseed, time.time() - tw,
                                                           '; '.join('%s %s' % (t.name, t.desc) for t in w.tables)))
        runner = Runner(cl, w, args.per_session)
        for i, seq in enumerate(seqs):
            total += 1
            kinds[seq.kind] += 1
            history = list(runner.history)
            fail, rs, rl = runner.run(seq)
            upto = fail.index if fail is not None and fail.index is not None else len(rs)
            for a, b in list(zip(rs, rl))[:upto]:
                if a.error and b.error and a.error[0] != b.error[0]:
                    both_err['%s (sharded) / %s (twin)' % (a.error[0], b.error[0])] += 1
            if fail is None:
                continue
            nfail += 1
            cl_ = classes.setdefault(fail.sig, [0, None])
            cl_[0] += 1
            log('\nFAILURE seed %d (world %d) sequence %d [%s]: %s' % (args.seed, wseed, i, seq.kind, fail.sig))
            log(indent(fail.text, '  '))
            if cl_[0] > 1 and cl_[1] is not None:
                log('  (this class was reduced above)')
                continue
            log('  sequence:')
            log(indent(seq.render()))
            # alone, on fresh sessions, from the declared rows
            f2, _, _ = runner.run(seq, fresh=True)
            alone = f2 is not None and f2.key == fail.key
            if not alone:
                log('  not reproduced alone on fresh sessions (%s); the sequences before it on its session:'
                    % (f2.sig if f2 else 'passes'))
                for h in history:
                    log(indent(h.render()) + '\n')
                if cl_[1] is None:
                    cl_[1] = 'needs the session history (see above)'
                continue
            rseq, rfail, tries = reduce_seq(runner, seq, fail, budget_end) if time.time() < budget_end \
                else (seq, fail, 0)
            report = ('  reduced (%d tries):\n%s\n  result: %s\n  declarations:\n%s' % (
                tries, indent(rseq.render()), indent(rfail.text, '    ').lstrip(),
                indent(declarations(cl, w, rseq))))
            if rseq.render('l') != rseq.render('s'):
                report += '\n  (twin side text:\n%s)' % indent(rseq.render('l'))
            log(report)
            cl_[1] = rseq.render().replace('\n', ' ')
            if args.repro_dir:
                os.makedirs(args.repro_dir, exist_ok=True)
                path = os.path.join(args.repro_dir, 'seed%d-%02d.sql' % (args.seed, len(
                    [c for c in classes.values() if c[1] is not None])))
                with open(path, 'w') as f:
                    f.write(repro_script(cl, w, rseq, rfail, 'write_fuzz seed %d world %d: %s' % (
                        args.seed, wseed, rfail.sig)))
                log('  reproduction: %s' % path)
        runner.close_sessions()
        if args.verbose:
            log('write_fuzz: world %d: %d sequences in %.1fs' % (wseed, n, time.time() - tw))
    if cl and not args.keep:
        try:
            cl.cleanup()
            drops = ['DROP EXTENSION IF EXISTS %s;' % e for e in ('colojoin', 'postgres_fdw') if e not in had_ext]
            if drops:
                cl.admin.execute('SET client_min_messages = warning;' + ''.join(drops))
        except (RuntimeError, ConnLost) as e:
            log('write_fuzz: cleanup failed: %s' % e)
            nfail += 1
    if classes:
        log('\nwrite_fuzz: failure classes (seed %d):' % args.seed)
        for sig, (cnt, ex) in classes.items():
            log('  %4d x %s' % (cnt, sig))
            if ex:
                log('         e.g. %s' % ex[:400])
    for k, cnt in both_err.most_common():
        log('write_fuzz:   %d x an error on both sides with different SQLSTATEs (fine): %s' % (cnt, k))
    log('write_fuzz: seed %d, %.0fs, %s' % (args.seed, time.time() - t0,
                                           ', '.join('%d %s' % (v, k) for k, v in sorted(kinds.items()))))
    log('write_fuzz: %d sequences, %d failures' % (total, nfail))
    sys.exit(1 if nfail else 0)


if __name__ == '__main__':
    main()
