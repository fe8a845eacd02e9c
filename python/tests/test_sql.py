"""SQL from Python, errors as exceptions, and the GIL released during I/O."""

import sys
import threading

import pyarrow as pa
import pytest

import strata


@pytest.fixture
def db(tmp_path):
    with strata.open(tmp_path / "db") as d:
        yield d


def test_sql_statements_return_arrow_tables(db):
    assert db.sql("CREATE TABLE users (id BIGINT PRIMARY KEY, name TEXT, age INT)").num_rows == 0
    inserted = db.sql("INSERT INTO users VALUES (1, 'ada', 36), (2, 'grace', 45), (3, 'alan', 41)")
    assert inserted.column(0).to_pylist() == [3]
    db.sql("UPDATE users SET age = age + 1 WHERE name LIKE 'a%'")
    db.sql("DELETE FROM users WHERE id = 2")
    out = db.sql("SELECT id, name, age FROM users ORDER BY id")
    assert isinstance(out, pa.Table)
    assert out.to_pylist() == [
        {"id": 1, "name": "ada", "age": 37},
        {"id": 3, "name": "alan", "age": 42},
    ]
    assert out.to_pandas()["age"].tolist() == [37, 42]
    pl = pytest.importorskip("polars")
    assert pl.from_arrow(out)["name"].to_list() == ["ada", "alan"]
    # The table the API sees is the one SQL wrote.
    assert db.table("users").get(3) == {"id": 3, "name": "alan", "age": 42}


def test_sql_over_tables_made_from_arrow_and_a_join(db):
    db.create_table(
        "orders",
        pa.table({"id": range(1000), "user_id": [i % 10 for i in range(1000)], "amount": [float(i) for i in range(1000)]}),
        primary_key="id",
    )
    db.create_table("users", pa.table({"id": range(10), "name": [f"u{i}" for i in range(10)]}), primary_key="id")
    out = db.sql(
        "SELECT u.name, sum(o.amount) AS total FROM orders o JOIN users u ON o.user_id = u.id "
        "GROUP BY u.name ORDER BY u.name"
    )
    want = {f"u{u}": float(sum(i for i in range(1000) if i % 10 == u)) for u in range(10)}
    assert dict(zip(out.column("name").to_pylist(), out.column("total").to_pylist())) == want


def test_sql_errors_are_exceptions_and_leave_the_database_usable(db):
    db.sql("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
    db.sql("INSERT INTO t VALUES (1, 'a')")
    with pytest.raises(strata.SqlError, match="(?i)syntax|expected"):
        db.sql("SELEC 1")
    with pytest.raises(strata.SqlError, match="absent"):
        db.sql("SELECT * FROM absent")
    with pytest.raises(strata.DuplicateKeyError, match="already"):
        db.sql("INSERT INTO t VALUES (2, 'b'), (1, 'again')")
    assert db.sql("SELECT count(*) AS n FROM t").column("n").to_pylist() == [1]
    with pytest.raises(strata.InvalidArgumentError):
        db.sql("")


def released_during(call):
    """Whether another Python thread ran while `call` was in Strata.

    With a switch interval far longer than the test, the interpreter never
    takes the GIL from a thread: the waiting main thread can run during
    `call` only if Strata released the GIL itself.
    """
    in_call = threading.Event()
    started = threading.Event()
    seen = []

    def worker():
        started.set()
        in_call.set()
        call()
        in_call.clear()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        t = threading.Thread(target=worker)
        t.start()
        started.wait()
        seen.append(in_call.is_set())
        t.join()
    finally:
        sys.setswitchinterval(old)
    return seen[0]


def test_the_gil_is_released_during_io(db):
    n = 200_000
    t = db.create_table("big", pa.table({"id": range(n), "v": [float(i) for i in range(n)]}), primary_key="id")
    assert released_during(lambda: t.scan())
    assert released_during(lambda: db.sql("SELECT sum(v) FROM big"))
    assert released_during(lambda: t.upsert(pa.table({"id": range(n), "v": [0.0] * n})))
    # A call that runs no pyarrow code (which may release the GIL itself).
    assert released_during(lambda: t.compact())


def test_an_iterator_used_from_two_threads_raises_instead_of_hanging(db):
    for i in range(2000):
        db.put(b"%05d" % i, b"v")
    it = db.scan()
    errors, done = [], []

    def drain():
        try:
            done.append(sum(1 for _ in it))
        except RuntimeError as e:
            errors.append(e)

    threads = [threading.Thread(target=drain) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "an iterator shared by threads hung"
    assert sum(done) <= 2000
