"""The key-value API: keyspaces, batches, iterators, durability, errors."""

import random

import pytest

import strata


@pytest.fixture
def db(tmp_path):
    with strata.open(tmp_path / "db") as d:
        yield d


def test_operations_match_a_dict(db):
    rng = random.Random(7)
    model = {}
    for _ in range(3000):
        key = b"k%04d" % rng.randrange(500)
        op = rng.random()
        if op < 0.6:
            value = rng.randbytes(rng.randrange(0, 40))
            db.put(key, value)
            model[key] = value
        elif op < 0.8:
            db.delete(key)
            model.pop(key, None)
        else:
            assert db.get(key) == model.get(key)
        if rng.random() < 0.002:
            db.flush()
    assert list(db.scan()) == sorted(model.items())
    assert list(db.scan(reverse=True)) == sorted(model.items(), reverse=True)
    lo, hi = b"k0100", b"k0300"
    want = [(k, v) for k, v in sorted(model.items()) if lo <= k < hi]
    assert list(db.scan(lo, hi)) == want
    assert list(db.scan(lo, hi, reverse=True)) == want[::-1]


def test_an_iterator_reads_at_the_snapshot_it_began_with(db):
    for i in range(1000):
        db.put(b"%04d" % i, b"old")
    it = db.scan()
    first = next(it)
    for i in range(1000):
        db.put(b"%04d" % i, b"new")
    rest = list(it)
    assert first == (b"0000", b"old")
    assert len(rest) == 999
    assert all(v == b"old" for _, v in rest)


def test_keyspaces_are_separate_and_a_batch_spans_them(db):
    index = db.keyspace("index")
    assert index.name == "index"
    batch = strata.WriteBatch()
    batch.put(b"user:1", b"ada")
    batch.put(b"name:ada", b"user:1", index)
    batch.delete(b"absent")
    assert len(batch) == 3
    db.write(batch, sync=True)
    assert len(batch) == 0
    assert db.get(b"user:1") == b"ada"
    assert db.get(b"name:ada") is None
    assert index.get(b"name:ada") == b"user:1"
    assert list(index.scan()) == [(b"name:ada", b"user:1")]
    assert "index" in db.keyspace_names()


def test_a_batch_refuses_keyspaces_of_another_database(tmp_path):
    # A batch names keyspaces by id; the same id in another database is
    # another keyspace, so a handle must not write through a database it
    # did not come from.
    with strata.open(tmp_path / "a") as a, strata.open(tmp_path / "b") as b:
        ka = a.keyspace("ks")
        kb = b.keyspace("ks")
        batch = strata.WriteBatch()
        batch.put(b"k", b"from-a", ka)
        with pytest.raises(strata.InvalidArgumentError, match="another Database"):
            batch.put(b"k", b"from-b", kb)
        with pytest.raises(strata.InvalidArgumentError, match="another Database"):
            batch.delete(b"k", kb)
        with pytest.raises(strata.InvalidArgumentError, match="another Database"):
            b.write(batch)
        assert len(batch) == 1
        assert kb.get(b"k") is None
        a.write(batch)
        assert ka.get(b"k") == b"from-a"
        assert kb.get(b"k") is None
        # An emptied batch may serve the other database.
        batch.put(b"k", b"from-b", kb)
        b.write(batch)
        assert kb.get(b"k") == b"from-b"
        assert ka.get(b"k") == b"from-a"


def test_writes_survive_close_and_reopen(tmp_path):
    path = tmp_path / "db"
    with strata.open(path) as db:
        for i in range(2000):
            db.put(b"%05d" % i, b"v%d" % i, sync=(i % 500 == 0))
        db.delete(b"00007")
    with strata.open(path) as db:
        assert db.get(b"00006") == b"v6"
        assert db.get(b"00007") is None
        assert len(list(db.scan())) == 1999


def test_read_only_refuses_writes(tmp_path):
    path = tmp_path / "db"
    with strata.open(path) as db:
        db.put(b"a", b"1")
    with strata.open(path, read_only=True) as db:
        assert db.get(b"a") == b"1"
        with pytest.raises(strata.InvalidArgumentError, match="read-only"):
            db.put(b"b", b"2")
        # A failed write keeps its batch, to be written again.
        batch = strata.WriteBatch()
        batch.put(b"b", b"2")
        with pytest.raises(strata.InvalidArgumentError, match="read-only"):
            db.write(batch)
        assert len(batch) == 1
    with strata.open(path) as db:
        db.write(batch)
        assert len(batch) == 0
        assert db.get(b"b") == b"2"


def test_errors_are_python_exceptions_with_the_engines_message(tmp_path):
    with pytest.raises(strata.NotFoundError, match="no database"):
        strata.open(tmp_path / "missing", create_if_missing=False)
    path = tmp_path / "db"
    db = strata.open(path)
    with pytest.raises(strata.Error, match="lock"):
        strata.open(path)
    table = db.keyspace("ks")
    it = db.scan()
    db.close()
    db.close()  # closing twice is harmless
    for call in (
        lambda: db.get(b"a"),
        lambda: db.put(b"a", b"b"),
        lambda: db.table_names(),
        lambda: table.put(b"a", b"b"),
    ):
        with pytest.raises(strata.ClosedError):
            call()
    del it
    assert "closed" in repr(db)
    with pytest.raises(TypeError):
        strata.open(tmp_path / "x").put("text is not bytes", b"v")


def test_an_iterator_hands_out_what_it_read_before_an_error(tmp_path):
    path = tmp_path / "db"
    keys = [b"k%05d" % i for i in range(3000)]
    with strata.open(path) as d:
        for k in keys:
            d.put(k, b"v" * 100)
        d.flush()
    # Damage a data block in the middle of the table (its index and filter
    # are at its end).
    sst = max(path.glob("*.sst"), key=lambda p: p.stat().st_size)
    data = bytearray(sst.read_bytes())
    data[len(data) // 3] ^= 0xFF
    sst.write_bytes(bytes(data))
    with strata.open(path) as d:
        readable = 0
        for k in keys:
            try:
                d.get(k)
            except strata.CorruptionError:
                break
            readable += 1
        assert 300 < readable < len(keys)
        got = []
        with pytest.raises(strata.CorruptionError):
            for k, _ in d.scan():
                got.append(k)
        # Every key before the damaged block, then the error.
        assert got == keys[:readable]
