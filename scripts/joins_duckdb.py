#!/usr/bin/env python3
"""DuckDB's side of strata-bench's joins suite.

Reads the suite's rows (CSV: id, r.a, s.b), builds the suite's tables in
DuckDB — r(id, a, pad), s(id, b, pad) and sp(id, pad), sp holding s's rows
keyed by their join value — with pads filling each row to the entry size
(JSON: {"entry": N}), and counts the rows of the primary-key join
(r.a = sp.id) and of the secondary join (r.a = s.b), each once, printing
the times and counts as JSON. Run by `strata-bench suite --suite joins`.
"""

import argparse
import json
import os
import sys
import time

import duckdb


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--csv", required=True, help="rows: id,a,b")
    ap.add_argument("--queries", required=True, help="JSON written by the suite")
    ap.add_argument("--db", required=True, help="DuckDB database file to create")
    args = ap.parse_args()
    with open(args.queries) as f:
        q = json.load(f)
    pad = max(int(q["entry"]) - 16, 0)
    if os.path.exists(args.db):
        os.remove(args.db)
    con = duckdb.connect(args.db)
    cols = {"id": "BIGINT", "a": "BIGINT", "b": "BIGINT"}
    t0 = time.perf_counter()
    con.execute("CREATE TEMP TABLE raw AS SELECT * FROM read_csv(?, header=false, columns=?)", [args.csv, cols])
    con.execute(f"CREATE TABLE r AS SELECT id, a, repeat('x', {pad}) AS pad FROM raw")
    con.execute(f"CREATE TABLE s AS SELECT id, b, repeat('x', {pad}) AS pad FROM raw")
    con.execute(f"CREATE TABLE sp AS SELECT DISTINCT b AS id, repeat('x', {pad}) AS pad FROM raw")
    con.execute("CHECKPOINT")
    load = time.perf_counter() - t0

    def count(sql):
        t = time.perf_counter()
        n = con.execute(sql).fetchone()[0]
        return time.perf_counter() - t, int(n)

    p_secs, p_rows = count("SELECT count(*) FROM r JOIN sp ON r.a = sp.id")
    n_secs, n_rows = count("SELECT count(*) FROM r JOIN s ON r.a = s.b")
    json.dump(
        {
            "version": duckdb.__version__,
            "load_secs": load,
            "p_secs": p_secs,
            "p_rows": p_rows,
            "n_secs": n_secs,
            "n_rows": n_rows,
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
