"""Tables from and to Arrow (pyarrow, polars, pandas), point reads,
partial updates, deletes, and what bad input does."""

import datetime

import pyarrow as pa
import pytest

import strata


@pytest.fixture
def db(tmp_path):
    with strata.open(tmp_path / "db") as d:
        yield d


def readings(n, start=0):
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "sensor": pa.array([f"s{i % 7}" for i in ids]),
            "value": pa.array([i * 0.5 for i in ids], pa.float64()),
            "flag": pa.array([i % 3 == 0 for i in ids]),
            "at": pa.array(
                [datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=i) for i in ids],
                pa.timestamp("us"),
            ),
        }
    )


def test_a_table_round_trips_through_arrow(db):
    data = readings(20_000)
    # Shuffled input comes back in key order.
    shuffled = data.take(pa.array(list(range(0, 20_000, 2)) + list(range(1, 20_000, 2))))
    t = db.create_table("r", shuffled, primary_key="id", layout="row-then-column:2")
    assert t.primary_key == ["id"]
    assert t.schema.field("id").type == pa.int64()
    assert not t.schema.field("id").nullable
    assert t.scan().equals(data.cast(t.schema))
    t.flush()
    t.compact()
    assert t.scan().equals(data.cast(t.schema))
    assert db.table_names() == ["r"]
    assert db.table("r").scan(["value"]).column("value").to_pylist() == data.column("value").to_pylist()


def test_scan_batches_streams_and_ranges_select_keys(db):
    t = db.create_table("r", readings(30_000), primary_key="id")
    reader = t.scan_batches(["id"], lower=1000, upper=25_000)
    assert isinstance(reader, pa.RecordBatchReader)
    sizes = [b.num_rows for b in reader]
    assert len(sizes) > 1, "a 24,000-row scan comes in more than one batch"
    assert sum(sizes) == 24_000
    ids = t.scan(["id"], lower=29_990).column("id").to_pylist()
    assert ids == list(range(29_990, 30_000))


def test_point_reads_and_partial_updates(db):
    t = db.create_table("r", readings(100), primary_key="id")
    row = t.get(42)
    assert row == {
        "id": 42,
        "sensor": "s0",
        "value": 21.0,
        "flag": True,
        "at": datetime.datetime(2026, 1, 1, 0, 0, 42),
    }
    assert t.get(42, ["value"]) == {"value": 21.0}
    assert t.get(1000) is None
    t.update(pa.table({"id": [42, 43], "value": [-1.0, -2.0]}))
    assert t.get(42) == {**row, "value": -1.0}
    assert t.get(43, ["sensor", "value"]) == {"sensor": "s1", "value": -2.0}
    t.upsert(pa.table({"id": [42], "sensor": ["new"], "value": [0.0], "flag": [False]}))
    assert t.get(42)["sensor"] == "new"
    assert t.get(42)["at"] is None  # an upsert replaces the whole row
    t.delete(42)
    t.delete_keys(pa.table({"id": [1, 2, 3]}))
    assert t.get(42) is None
    assert t.scan(["id"]).num_rows == 96


def test_compound_keys(db):
    data = pa.table({"a": ["x", "x", "y"], "b": [2, 1, 1], "v": [1.0, 2.0, 3.0]})
    t = db.create_table("c", data, primary_key=["a", "b"])
    assert t.get(("x", 1)) == {"a": "x", "b": 1, "v": 2.0}
    assert t.scan(lower=("x",), upper=("y",)).column("b").to_pylist() == [1, 2]
    with pytest.raises(strata.InvalidArgumentError, match="2 key column"):
        t.get("x")


def test_a_duplicate_key_writes_nothing(db):
    t = db.create_table("r", readings(10), primary_key="id")
    with pytest.raises(strata.DuplicateKeyError, match="key"):
        t.insert(readings(5, start=8))  # 8 and 9 exist; 10..12 do not
    assert t.scan(["id"]).column("id").to_pylist() == list(range(10))
    # A failed load leaves no table behind.
    dup = pa.table({"id": [1, 1], "v": [1.0, 2.0]})
    with pytest.raises(strata.DuplicateKeyError):
        db.create_table("d", dup, primary_key="id")
    assert "d" not in db.table_names()


def test_polars_and_pandas_go_in_and_come_out(db):
    pl = pytest.importorskip("polars")
    pd = pytest.importorskip("pandas")
    frame = pl.DataFrame({"id": [3, 1, 2], "name": ["c", "a", "b"], "small": [1, 2, 3]}).with_columns(
        pl.col("small").cast(pl.Int16)
    )
    # polars exports strings as string views and int16; both are widened.
    t = db.create_table("p", frame, primary_key="id")
    assert t.schema.field("name").type == pa.string()
    assert t.schema.field("small").type == pa.int32()
    t.insert(pd.DataFrame({"id": [4], "name": ["d"], "small": [4]}))
    out = pl.from_arrow(t.scan())
    assert out["name"].to_list() == ["a", "b", "c", "d"]
    assert t.scan().to_pandas()["small"].tolist() == [2, 3, 1, 4]


def test_numpy_scalars_are_keys(db):
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    t = db.create_table("r", readings(100), primary_key="id")
    # What pandas hands back from a frame: numpy integers, not Python ints.
    frame = t.scan(["id", "flag"]).to_pandas()
    key = frame["id"].iloc[7]
    assert isinstance(key, np.integer)
    assert t.get(key)["id"] == 7
    assert t.get(np.int32(8), ["id"]) == {"id": 8}
    assert t.scan(["id"], lower=np.int64(95)).column("id").to_pylist() == [95, 96, 97, 98, 99]
    t.delete(np.uint16(9))
    assert t.get(9) is None
    with pytest.raises(OverflowError):
        t.get(np.uint64(2**63))  # past i64: an error, not a wrong key
    assert isinstance(pd.Series([True])[0], np.bool_)


def test_bad_input_is_refused_by_name(db):
    t = db.create_table("r", readings(3), primary_key="id")
    with pytest.raises(strata.InvalidArgumentError, match="not a column"):
        t.insert(pa.table({"id": [9], "nope": [1]}))
    with pytest.raises(strata.InvalidArgumentError, match="twice"):
        t.insert(pa.table([[9], [1.0], [2.0]], names=["id", "value", "value"]))
    with pytest.raises(strata.InvalidArgumentError, match="id"):
        t.insert(pa.table({"id": pa.array([None], pa.int64()), "value": [1.0]}))
    with pytest.raises(strata.InvalidArgumentError, match="value"):
        t.insert(pa.table({"id": [9], "value": ["not a number"]}))
    with pytest.raises(strata.InvalidArgumentError, match="overflow|out of range|Can't cast"):
        db.create_table("o", pa.table({"id": [1], "v": pa.array([1], pa.int8())}), "id").insert(
            pa.table({"id": [2], "v": pa.array([2**40], pa.int64())})
        )
    with pytest.raises(strata.InvalidArgumentError, match="cannot be stored"):
        t.insert(pa.table({"id": [9], "value": [1.0], "flag": [True], "at": [1.5]}))
    with pytest.raises(strata.InvalidArgumentError, match="cannot be stored"):
        t.insert(pa.table({"id": [1.0], "value": [1.0]}))  # a double into the BIGINT key
    with pytest.raises(strata.InvalidArgumentError, match="List"):
        db.create_table("l", pa.table({"id": [1], "v": [[1, 2]]}), primary_key="id")
    with pytest.raises(strata.InvalidArgumentError, match="unknown table option"):
        db.create_table("u", pa.schema([("id", pa.int64()), ("v", pa.int64())]), "id", options={"layuot": "x"})
    with pytest.raises(strata.AlreadyExistsError):
        db.create_table("r", readings(1), primary_key="id")
    with pytest.raises(strata.NotFoundError, match="no table"):
        db.table("absent")
    assert t.scan().num_rows == 3


def test_table_options_and_an_empty_table_from_a_schema(db):
    schema = pa.schema([("k", pa.int32()), ("v", pa.string())])
    t = db.create_table("e", schema, primary_key="k", options={"layout": "column"})
    assert t.scan().num_rows == 0
    assert t.scan().schema == t.schema
    assert "key (k)" in t.describe()
    db.drop_table("e")
    assert db.table_names() == []


def test_columns_of_nulls_and_integers_into_doubles(db):
    t = db.create_table("r", readings(3), primary_key="id")
    # pyarrow types [None] as `null`; pandas does the same for a column of None.
    t.insert(pa.table({"id": [10], "sensor": [None], "value": pa.array([2**53], pa.int64())}))
    row = t.get(10, ["sensor", "value"])
    assert row == {"sensor": None, "value": float(2**53)}
    # An integer a double cannot hold exactly is refused, not rounded.
    with pytest.raises(strata.InvalidArgumentError, match="exact double"):
        t.insert(pa.table({"id": [11], "value": pa.array([2**53 + 1], pa.int64())}))
    assert t.get(11) is None
    # A Python int addresses a double key.
    f = db.create_table("f", pa.table({"k": [1.0, 2.5], "v": [1, 2]}), primary_key="k")
    assert f.get(1) == {"k": 1.0, "v": 1}
    assert f.scan(["k"], lower=2).column("k").to_pylist() == [2.5]
    f.delete(1)
    assert f.get(1.0) is None
    with pytest.raises(strata.InvalidArgumentError):
        f.get(2**53 + 1)
