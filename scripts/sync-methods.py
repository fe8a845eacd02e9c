#!/usr/bin/env python3
"""How fast this machine's disk makes one small append durable, by three
methods (issue 24's synced writes from one thread): append + fdatasync on a
preallocated file (what Strata's log does), O_DIRECT|O_DSYNC rewriting the
page that holds the tail, and O_DIRECT|O_DSYNC writing a fresh page each
time. Usage: python3 scripts/sync-methods.py [DIR] [--rounds N]"""
import mmap
import os
import sys
import time

N = 4000
RECORD = b"x" * 150
PAGE = 4096


def fresh(path):
    if os.path.exists(path):
        os.remove(path)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    os.posix_fallocate(fd, 0, 64 << 20)
    os.fsync(fd)
    os.close(fd)


def append_fdatasync(path):
    fd = os.open(path, os.O_RDWR)
    off = 0
    t = time.perf_counter()
    for _ in range(N):
        os.pwrite(fd, RECORD, off)
        off += len(RECORD)
        os.fdatasync(fd)
    d = time.perf_counter() - t
    os.close(fd)
    return N / d


def direct(path, new_page):
    fd = os.open(path, os.O_RDWR | os.O_DSYNC | os.O_DIRECT)
    buf = mmap.mmap(-1, PAGE)
    off = 0
    t = time.perf_counter()
    for i in range(N):
        buf[: len(RECORD)] = RECORD
        at = i * PAGE if new_page else (off // PAGE) * PAGE
        os.pwritev(fd, [buf], at)
        off += len(RECORD)
    d = time.perf_counter() - t
    os.close(fd)
    return N / d


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rounds = 2
    if "--rounds" in sys.argv:
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1])
        args = [a for a in args if a != str(rounds)]
    directory = args[0] if args else "data"
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "sync-methods.tmp")
    methods = [
        ("append + fdatasync (preallocated)", append_fdatasync),
        ("O_DIRECT|O_DSYNC, tail page rewritten", lambda p: direct(p, False)),
        ("O_DIRECT|O_DSYNC, a new page each", lambda p: direct(p, True)),
    ]
    try:
        for r in range(rounds):
            for name, f in methods:
                fresh(path)
                print(f"round {r + 1}  {name:40s} {f(path):8.0f} syncs/s")
    finally:
        if os.path.exists(path):
            os.remove(path)


if __name__ == "__main__":
    main()
