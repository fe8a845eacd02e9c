#!/usr/bin/env python3
"""DuckDB's side of strata-bench's opd suite (its table phase).

Loads the suite's rows (CSV: id, "city", n) into a DuckDB table with the id
as primary key, runs the suite's filters (JSON: ranges [lo, hi) of city),
counting the rows whose city lies in each range, and prints the load time,
the database's size, each filter's latency in microseconds and its count as
JSON on standard output. Run by `strata-bench suite --suite opd`; not meant
to be run by hand (but it can be: see --help).
"""

import argparse
import json
import os
import sys
import time

import duckdb


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--csv", required=True, help="rows: id,\"city\",n")
    ap.add_argument("--queries", required=True, help="JSON written by the suite")
    ap.add_argument("--db", required=True, help="DuckDB database file to create")
    args = ap.parse_args()

    with open(args.queries) as f:
        q = json.load(f)
    if os.path.exists(args.db):
        os.remove(args.db)
    con = duckdb.connect(args.db)
    con.execute(
        "CREATE TABLE t (id BIGINT PRIMARY KEY, city VARCHAR NOT NULL, n INTEGER NOT NULL)"
    )
    types = {"id": "BIGINT", "city": "VARCHAR", "n": "INTEGER"}
    t0 = time.perf_counter()
    con.execute(
        "INSERT INTO t SELECT * FROM read_csv(?, header=false, quote='\"', escape='\"', columns=?)",
        [args.csv, types],
    )
    con.execute("CHECKPOINT")
    load = time.perf_counter() - t0
    size = os.path.getsize(args.db)

    sql = "SELECT count(*) FROM t WHERE city >= ? AND city < ?"
    filter_us, matches = [], []
    for lo, hi in q["ranges"]:
        t = time.perf_counter()
        rows = con.execute(sql, [lo, hi]).fetchall()
        filter_us.append((time.perf_counter() - t) * 1e6)
        matches.append(int(rows[0][0]))
    json.dump(
        {
            "version": duckdb.__version__,
            "load_secs": load,
            "disk_bytes": size,
            "filter_us": filter_us,
            "matches": matches,
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
