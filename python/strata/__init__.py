"""Strata: an embedded LSM-tree storage engine for real-time analytics.

    import strata
    with strata.open("./data/py") as db:
        db.put(b"k", b"v")
        t = db.create_table("readings", arrow_table, primary_key="id")
        print(db.sql("SELECT count(*) FROM readings").to_pandas())

Keys and values of the key-value API are bytes. Table rows go in and come
out as Arrow: anything exporting an Arrow stream (pyarrow, polars, pandas)
goes in, and `pyarrow.Table` / `RecordBatchReader` come out, through the
Arrow C data interface without copying the columns. Every call that does
I/O releases the GIL.
"""

from ._strata import (
    AlreadyExistsError,
    ClosedError,
    CorruptionError,
    Database,
    DuplicateKeyError,
    Error,
    InvalidArgumentError,
    KeyIterator,
    Keyspace,
    NotFoundError,
    SqlError,
    Table,
    WriteBatch,
    __version__,
    open,
)

__all__ = [
    "AlreadyExistsError",
    "ClosedError",
    "CorruptionError",
    "Database",
    "DuplicateKeyError",
    "Error",
    "InvalidArgumentError",
    "KeyIterator",
    "Keyspace",
    "NotFoundError",
    "SqlError",
    "Table",
    "WriteBatch",
    "__version__",
    "open",
]
