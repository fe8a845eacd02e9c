#!/usr/bin/env python3
"""DuckDB's side of strata-bench's htap suite.

Loads the suite's rows (CSV: key, a1..aN) into a DuckDB table with the key
as primary key, runs the Q2a point reads, Q4 sums, Q5 maxima and J joins
(with a side table of keys and weights) the suite gives (JSON), and prints each query's latency in microseconds as JSON on
standard output. Run by `strata-bench suite --suite htap`; not meant to be
run by hand (but it can be: see --help).
"""

import argparse
import json
import os
import sys
import time

import duckdb


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--csv", required=True, help="rows: key,a1,...,aN")
    ap.add_argument("--queries", required=True, help="JSON written by the suite")
    ap.add_argument("--db", required=True, help="DuckDB database file to create")
    args = ap.parse_args()

    with open(args.queries) as f:
        q = json.load(f)
    n = q["columns"]
    if os.path.exists(args.db):
        os.remove(args.db)
    con = duckdb.connect(args.db)
    cols = ", ".join(f"a{i + 1} INTEGER NOT NULL" for i in range(n))
    con.execute(f"CREATE TABLE t (k BIGINT PRIMARY KEY, {cols})")
    names = ["k"] + [f"a{i + 1}" for i in range(n)]
    types = {name: ("BIGINT" if name == "k" else "INTEGER") for name in names}
    t0 = time.perf_counter()
    con.execute(
        "INSERT INTO t SELECT * FROM read_csv(?, header=false, columns=?)",
        [args.csv, types],
    )
    con.execute("CHECKPOINT")
    load = time.perf_counter() - t0

    def cols_of(r):
        return [f"a{i + 1}" for i in range(r[0], r[1])]

    point_sql = f"SELECT {', '.join(cols_of(q['point_cols']))} FROM t WHERE k = ?"
    sum_sql = (
        f"SELECT COALESCE(SUM({' + '.join(c + '::BIGINT' for c in cols_of(q['sum_cols']))}), 0) "
        "FROM t WHERE k >= ? AND k < ?"
    )
    max_sql = (
        f"SELECT {', '.join(f'MAX({c})' for c in cols_of(q['max_cols']))} "
        "FROM t WHERE k >= ? AND k < ?"
    )

    def timed(sql, params):
        t = time.perf_counter()
        rows = con.execute(sql, params).fetchall()
        return (time.perf_counter() - t) * 1e6, rows

    q2a = [timed(point_sql, [k])[0] for k in q["points"]]
    q4, sums = [], []
    for lo, hi in q["sums"]:
        us, rows = timed(sum_sql, [lo, hi])
        q4.append(us)
        sums.append(int(rows[0][0]))
    q5, maxes = [], []
    for lo, hi in q["maxes"]:
        us, rows = timed(max_sql, [lo, hi])
        q5.append(us)
        maxes.append([int(v) if v is not None else 0 for v in rows[0]])
    join_us = []
    if q.get("joins", 0) > 0:
        con.execute("CREATE TABLE side (k BIGINT PRIMARY KEY, w INTEGER NOT NULL)")
        keys = [k for k, _ in q["side"]]
        weights = [w for _, w in q["side"]]
        con.execute(
            "INSERT INTO side SELECT unnest(?::BIGINT[]), unnest(?::INTEGER[])", [keys, weights]
        )
        join_sql = "SELECT count(*), sum(h.a1), sum(s.w) FROM t h JOIN side s ON h.k = s.k"
        join_us = [timed(join_sql, [])[0] for _ in range(q["joins"])]
    json.dump(
        {
            "version": duckdb.__version__,
            "load_secs": load,
            "q2a_us": q2a,
            "q4_us": q4,
            "q5_us": q5,
            "q4_sums": sums,
            "q5_maxes": maxes,
            "join_us": join_us,
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
