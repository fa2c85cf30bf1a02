"""The native Parquet writer (scope.ingest._native.write_parquet): files read back exactly, with pyarrow and DuckDB."""

from __future__ import annotations

import array
import math
import os
import random
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

native = pytest.importorskip("scope.ingest._native")
write_parquet = native.write_parquet

Column = tuple[str, str, Any]

ROOT = Path(__file__).resolve().parent.parent
ARROW_TYPES = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "string": pa.string(),
}
DUCKDB_TYPES = {"int32": "INTEGER", "int64": "BIGINT", "float64": "DOUBLE", "bool": "BOOLEAN", "string": "VARCHAR"}
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
WEIRD_STRINGS = [
    "",
    "plain",
    'say "hi"',
    "it's",
    "line\nbreak",
    "tab\there",
    "back\\slash",
    "héllo",
    "日本語",
    "emoji 🚀🔥",
    "e\u0301 combining",
    "nul\x00inside",
    "x" * 5000,
    "null",
    "NULL",
    " ",
]


def plain_values(values: Any) -> list[Any]:
    """A column's values as a list (buffers and numpy arrays too), NaN replaced by a comparable marker."""
    items = values.tolist() if hasattr(values, "tolist") else list(values)
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in items]


def duckdb_query(sql: str) -> duckdb.DuckDBPyRelation:
    return duckdb.connect().sql(sql)


def assert_reads_back(path: Path, columns: list[Column]) -> None:
    """pyarrow and DuckDB both read exactly `columns` (names, types, values, nulls) from path."""
    table = pq.read_table(path)
    assert table.column_names == [name for name, _, _ in columns]
    via_duckdb = duckdb_query(f"SELECT * FROM read_parquet('{path}')").to_arrow_table()
    described = duckdb_query(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()
    for (name, type_name, values), (_, duck_type, *_) in zip(columns, described, strict=True):
        expected = plain_values(values)
        assert table.schema.field(name).type == ARROW_TYPES[type_name], name
        assert duck_type == DUCKDB_TYPES[type_name], name
        assert plain_values(table.column(name).to_pylist()) == expected, f"pyarrow, column {name}"
        assert plain_values(via_duckdb.column(name).to_pylist()) == expected, f"duckdb, column {name}"


def column_meta(path: Path, row_group: int, column: int) -> pq.ColumnChunkMetaData:
    return pq.read_metadata(path).row_group(row_group).column(column)


# ---- round trips ---------------------------------------------------------------------------------------


def test_every_type_with_nulls(tmp_path: Path) -> None:
    columns: list[Column] = [
        ("i32", "int32", [1, None, -7, INT32_MAX, None]),
        ("i64", "int64", [None, 2, -(10**15), 0, None]),
        ("f64", "float64", [1.5, None, -0.0, 3, None]),
        ("flag", "bool", [True, False, None, True, None]),
        ("name", "string", ["a", None, "b", "a", None]),
    ]
    path = tmp_path / "t.parquet"
    write_parquet(path, columns)
    assert_reads_back(path, columns)


@pytest.mark.parametrize("type_name", sorted(ARROW_TYPES))
def test_all_null_column(tmp_path: Path, type_name: str) -> None:
    columns: list[Column] = [("x", type_name, [None] * 1000), ("n", "int64", list(range(1000)))]
    path = tmp_path / "t.parquet"
    write_parquet(path, columns)
    assert_reads_back(path, columns)
    stats = column_meta(path, 0, 0).statistics
    assert stats.null_count == 1000 and not stats.has_min_max


def test_zero_rows_keeps_the_schema(tmp_path: Path) -> None:
    columns: list[Column] = [(f"c_{t}", t, []) for t in ARROW_TYPES]
    path = tmp_path / "t.parquet"
    write_parquet(path, columns, metadata={"k": "v"})
    assert_reads_back(path, columns)
    assert pq.read_metadata(path).num_rows == 0
    assert duckdb_query(f"SELECT count(*) FROM read_parquet('{path}')").fetchall() == [(0,)]


def test_one_row(tmp_path: Path) -> None:
    columns: list[Column] = [
        ("a", "int32", [5]),
        ("b", "int64", [None]),
        ("c", "float64", [2.25]),
        ("d", "bool", [False]),
        ("e", "string", ["only"]),
    ]
    path = tmp_path / "t.parquet"
    write_parquet(path, columns)
    assert_reads_back(path, columns)


def test_no_columns(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    write_parquet(path, [])
    assert pq.read_table(path).num_columns == 0


def test_many_pages_and_row_groups(tmp_path: Path) -> None:
    n = 1_000_000
    rng = np.random.default_rng(1)
    ts = np.cumsum(rng.integers(1, 1000, size=n)).tolist()
    names = [f"kernel_{i}" for i in range(3000)]
    columns: list[Column] = [
        ("ts", "int64", ts),
        ("rank", "int32", [None if i % 97 == 0 else i % 8 for i in range(n)]),
        ("x", "float64", rng.random(n).tolist()),
        ("ok", "bool", (rng.random(n) < 0.3).tolist()),
        ("name", "string", [names[i] for i in rng.integers(0, len(names), size=n).tolist()]),
    ]
    path = tmp_path / "t.parquet"
    write_parquet(path, columns, row_group_size=300_000)
    meta = pq.read_metadata(path)
    assert meta.num_rows == n
    assert [meta.row_group(g).num_rows for g in range(meta.num_row_groups)] == [300_000, 300_000, 300_000, 100_000]
    assert_reads_back(path, columns)


def test_large_unicode_dictionary(tmp_path: Path) -> None:
    distinct = [f"näme {i} ✓" for i in range(50_000)] + WEIRD_STRINGS
    values: list[str | None] = [*distinct, *reversed(distinct), None, "", *WEIRD_STRINGS]
    columns: list[Column] = [("s", "string", values)]
    path = tmp_path / "t.parquet"
    write_parquet(path, columns, row_group_size=40_000)
    assert_reads_back(path, columns)
    assert pq.read_metadata(path).num_row_groups == 3


def test_equal_strings_share_one_dictionary_entry(tmp_path: Path) -> None:
    values = ["".join(["ab", "c"]) for _ in range(100)] + [f"n{i % 3}" for i in range(100)]  # distinct objects
    path = tmp_path / "t.parquet"
    write_parquet(path, [("s", "string", values)])
    assert_reads_back(path, [("s", "string", values)])
    dictionary = pq.read_table(path, read_dictionary=["s"]).column("s").chunk(0).dictionary
    assert dictionary.to_pylist() == ["abc", "n0", "n1", "n2"]


def runs_of(distinct: int, n: int) -> list[str | None]:
    """Runs of lengths around the encoder's thresholds (RLE from 8 repeats, bit-packed groups of 8), some nulls."""
    lengths = [1, 2, 7, 8, 9, 15, 16, 17, 100, 3]
    values: list[str | None] = []
    i = 0
    while len(values) < n:
        values += [None if i % 50 == 49 else f"v{(i * 7919) % distinct}"] * lengths[i % len(lengths)]
        i += 1
    return values[:n]


def test_dictionary_code_widths_and_runs(tmp_path: Path) -> None:
    n = 150_000  # two pages per column chunk
    columns: list[Column] = [(f"d{k}", "string", runs_of(k, n)) for k in (1, 2, 3, 5, 9, 17, 256, 257, 70_000)]
    path = tmp_path / "t.parquet"
    write_parquet(path, columns)
    assert_reads_back(path, columns)


def test_integer_extremes(tmp_path: Path) -> None:
    columns: list[Column] = [
        ("i32", "int32", [INT32_MIN, INT32_MAX, 0, -1, None]),
        ("i64", "int64", [INT64_MIN, INT64_MAX, 0, -1, None]),
    ]
    path = tmp_path / "t.parquet"
    write_parquet(path, columns)
    assert_reads_back(path, columns)
    stats = column_meta(path, 0, 1).statistics
    assert (stats.min, stats.max) == (INT64_MIN, INT64_MAX)


def test_special_doubles(tmp_path: Path) -> None:
    values = [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 1.7976931348623157e308, None, -1.5]
    path = tmp_path / "t.parquet"
    write_parquet(path, [("d", "float64", values)])
    assert_reads_back(path, [("d", "float64", values)])
    stats = column_meta(path, 0, 0).statistics
    assert (stats.min, stats.max) == (-math.inf, math.inf)  # NaN left out of the statistics
    assert math.copysign(1, pq.read_table(path).column("d")[3].as_py()) == -1  # -0.0 kept


@pytest.mark.parametrize("compression, codec", [("zstd", "ZSTD"), ("none", "UNCOMPRESSED")])
def test_compression_codec_in_metadata(tmp_path: Path, compression: str, codec: str) -> None:
    columns: list[Column] = [("a", "int64", list(range(10_000))), ("s", "string", ["x", "y"] * 5_000)]
    path = tmp_path / "t.parquet"
    write_parquet(path, columns, compression=compression)
    assert [column_meta(path, 0, i).compression for i in range(2)] == [codec, codec]
    assert_reads_back(path, columns)


def test_zstd_shrinks_repetitive_data(tmp_path: Path) -> None:
    columns: list[Column] = [("a", "int64", [-1] * 100_000)]
    write_parquet(tmp_path / "z.parquet", columns, compression="zstd")
    write_parquet(tmp_path / "n.parquet", columns, compression="none")
    assert (tmp_path / "z.parquet").stat().st_size * 20 < (tmp_path / "n.parquet").stat().st_size


@pytest.mark.subprocess
def test_without_libzstd_files_are_written_uncompressed(tmp_path: Path) -> None:
    # A library named libzstd.so.1 that lacks zstd's functions (a copy of libz) shadows the real one.
    libz = next(
        (line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines() if "/libz.so" in line), None
    )
    if libz is None:
        pytest.skip("libz not mapped in this process (needs Linux)")
    (tmp_path / "lib").mkdir()
    for name in ("libzstd.so.1", "libzstd.so"):  # the writer tries both names
        shutil.copy(libz, tmp_path / "lib" / name)
    path = tmp_path / "t.parquet"
    code = f"from scope.ingest import _native; _native.write_parquet({str(path)!r}, [('a', 'int64', [1, None, 3])])"
    env = {**os.environ, "LD_LIBRARY_PATH": str(tmp_path / "lib")}
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, timeout=60, check=True)
    assert column_meta(path, 0, 0).compression == "UNCOMPRESSED"
    assert_reads_back(path, [("a", "int64", [1, None, 3])])


def test_key_value_metadata(tmp_path: Path) -> None:
    metadata = {"scope.version": "1", "json": '{"a": [1, 2]}', "ünï": "cödé ✓", "empty": ""}
    path = tmp_path / "t.parquet"
    write_parquet(path, [("a", "int32", [1])], metadata=metadata)
    assert pq.read_metadata(path).metadata == {k.encode(): v.encode() for k, v in metadata.items()}
    assert pq.read_metadata(path).created_by == "scope"


# ---- statistics ----------------------------------------------------------------------------------------


def test_statistics_per_row_group(tmp_path: Path) -> None:
    n = 10_000
    columns: list[Column] = [
        ("ts", "int64", [1_000 + i for i in range(n)]),
        ("r", "int32", [None if i % 10 == 0 else i % 7 for i in range(n)]),
        ("f", "float64", [i / 2 for i in range(n)]),
        ("b", "bool", [True] * n),
        ("s", "string", [f"name{i % 50:02d}" for i in range(n)]),
    ]
    path = tmp_path / "t.parquet"
    write_parquet(path, columns, row_group_size=4_000)
    for group, (lo, hi) in enumerate([(0, 3_999), (4_000, 7_999), (8_000, 9_999)]):
        ts = column_meta(path, group, 0).statistics
        assert (ts.min, ts.max, ts.null_count) == (1_000 + lo, 1_000 + hi, 0)
        r = column_meta(path, group, 1).statistics
        assert (r.min, r.max, r.null_count) == (0, 6, (hi - lo) // 10 + 1)
        f = column_meta(path, group, 2).statistics
        assert (f.min, f.max) == (lo / 2, hi / 2)
        b = column_meta(path, group, 3).statistics
        assert (b.min, b.max) == (True, True)
        s = column_meta(path, group, 4).statistics
        assert (s.min, s.max) == ("name00", "name49")


def test_long_strings_are_left_out_of_statistics(tmp_path: Path) -> None:
    values = ["a", "z" * 5000, None]
    path = tmp_path / "t.parquet"
    write_parquet(path, [("s", "string", values)])
    stats = column_meta(path, 0, 0).statistics
    assert (stats.null_count, stats.has_min_max) == (1, False)
    assert duckdb_query(f"SELECT count(*) FROM read_parquet('{path}') WHERE s > 'b'").fetchall() == [(1,)]


def test_duckdb_filters_with_statistics(tmp_path: Path) -> None:
    n = 200_000
    ts = [10 * i for i in range(n)]
    names = [f"k{i // 50_000}" for i in range(n)]
    path = tmp_path / "t.parquet"
    write_parquet(path, [("ts", "int64", ts), ("name", "string", names)], row_group_size=25_000)
    con = duckdb.connect()
    for lo, hi in [(0, 0), (249_990, 250_000), (1_000_000, 1_500_005), (-5, 3), (1_999_990, 10**12), (-10, -1)]:
        got = con.sql(f"SELECT count(*), min(ts), max(ts) FROM read_parquet('{path}') WHERE ts BETWEEN {lo} AND {hi}")
        inside = [t for t in ts if lo <= t <= hi]
        assert got.fetchall() == [(len(inside), min(inside, default=None), max(inside, default=None))], (lo, hi)
    assert con.sql(f"SELECT count(*) FROM read_parquet('{path}') WHERE name = 'k2'").fetchall() == [(50_000,)]
    assert con.sql(f"SELECT count(*) FROM read_parquet('{path}') WHERE name > 'k2'").fetchall() == [(50_000,)]
    assert con.sql(f"SELECT count(*) FROM read_parquet('{path}') WHERE name = 'k9'").fetchall() == [(0,)]
    filtered = pq.read_table(path, filters=[("ts", ">=", 1_999_000)])
    assert filtered.column("ts").to_pylist() == [t for t in ts if t >= 1_999_000]


# ---- inputs --------------------------------------------------------------------------------------------


def test_buffers_are_accepted(tmp_path: Path) -> None:
    columns: list[Column] = [
        ("q", "int64", array.array("q", [INT64_MIN, 0, INT64_MAX])),
        ("i", "int32", array.array("i", [INT32_MIN, 1, INT32_MAX])),
        ("d", "float64", array.array("d", [0.5, math.nan, -math.inf])),
        ("b", "bool", bytes([1, 0, 1])),
        ("np_i64", "int64", np.array([3, 4, 5], dtype=np.int64)),
        ("np_i32", "int32", np.array([6, 7, 8], dtype=np.int32)),
        ("np_f64", "float64", np.array([1.0, 2.0, 3.0])),
        ("np_bool", "bool", np.array([False, True, True])),
        ("view", "int64", memoryview(array.array("q", [9, 10, 11]))),
    ]
    path = tmp_path / "t.parquet"
    write_parquet(path, columns)
    expected = [(name, t, [bool(v) for v in values] if t == "bool" else values) for name, t, values in columns]
    assert_reads_back(path, expected)


def test_other_numbers_are_converted(tmp_path: Path) -> None:
    given: list[Column] = [
        ("widened", "int64", np.array([1, 2, 3], dtype=np.int32)),  # itemsize 4: converted item by item
        ("strided", "int64", np.arange(10, dtype=np.int64)[::2][:3]),  # not contiguous: likewise
        ("np_items", "float64", [np.float32(1.5), np.int64(2), 3]),
        ("np_ints", "int32", [np.int16(-4), np.uint8(200), False]),
        ("int_bools", "bool", [1, 0, None]),
        ("tuple", "int64", (7, None, 9)),
    ]
    expected = [[1, 2, 3], [0, 2, 4], [1.5, 2.0, 3.0], [-4, 200, 0], [True, False, None], [7, None, 9]]
    path = tmp_path / "t.parquet"
    write_parquet(path, given)
    assert_reads_back(path, [(name, t, values) for (name, t, _), values in zip(given, expected, strict=True)])


def test_concurrent_writes_from_threads(tmp_path: Path) -> None:
    def write(i: int) -> None:
        columns: list[Column] = [("i", "int64", list(range(i, i + 200_000))), ("s", "string", [str(i)] * 200_000)]
        write_parquet(tmp_path / f"{i}.parquet", columns, row_group_size=50_000)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i in range(8):
        table = pq.read_table(tmp_path / f"{i}.parquet")
        assert table.column("i").to_pylist() == list(range(i, i + 200_000))
        assert set(table.column("s").to_pylist()) == {str(i)}


ROUND_TRIP_TYPES = sorted(ARROW_TYPES)


def random_value(rng: random.Random, type_name: str, words: list[str]) -> Any:
    if type_name == "int32":
        return rng.choice([rng.randint(INT32_MIN, INT32_MAX), rng.randint(-3, 3)])
    if type_name == "int64":
        return rng.choice([rng.randint(INT64_MIN, INT64_MAX), rng.randint(-3, 3), -1])
    if type_name == "float64":
        return rng.choice([rng.uniform(-1e9, 1e9), math.nan, math.inf, 0.0, rng.random()])
    if type_name == "bool":
        return rng.random() < 0.5
    return rng.choice(words)


def random_column(rng: random.Random, index: int, n: int) -> Column:
    type_name = rng.choice(ROUND_TRIP_TYPES)
    null_share = rng.choice([0.0, 0.0, 0.01, 0.5, 0.99, 1.0])
    words = ["".join(rng.choice("aé b\n\"'✓") for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(1, 500))]
    runs = rng.random() < 0.5  # repeats exercise the RLE runs of levels and codes
    values: list[Any] = []
    while len(values) < n:
        value = None if rng.random() < null_share else random_value(rng, type_name, words)
        values += [value] * (rng.randint(1, 40) if runs else 1)
    return (f"c{index}", type_name, values[:n])


@pytest.mark.parametrize("seed", range(10))
def test_random_round_trip(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([1, 7, 8, 9, 1000, 140_000, 300_001])
    columns = [random_column(rng, i, n) for i in range(rng.randint(1, 8))]
    path = tmp_path / "t.parquet"
    write_parquet(
        path,
        columns,
        row_group_size=rng.choice([1, 5, 1000, 131_072, 1 << 20])
        if n < 10_000
        else rng.choice([50_000, 140_000, 1 << 20]),
        compression=rng.choice(["zstd", "none"]),
    )
    assert_reads_back(path, columns)


# ---- errors --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "columns, error, message",
    [
        ([("a", "int128", [1])], ValueError, "column 'a': unknown type 'int128'"),
        ([("a", "int64", [1, 2]), ("b", "int64", [1])], ValueError, "column 'b' has 1 values but column 'a' has 2"),
        ([("a", "int32", [2**31])], ValueError, "column 'a': row 0: value out of range for int32"),
        ([("a", "int32", [None, INT32_MIN - 1])], ValueError, "column 'a': row 1: value out of range for int32"),
        ([("a", "int64", [2**63])], ValueError, "column 'a': row 0: value out of range for int64"),
        ([("a", "int64", [1, "2"])], TypeError, "column 'a': row 1: expected int or None, got str"),
        ([("a", "int64", [1.0])], TypeError, "column 'a': row 0: expected int or None, got float"),
        ([("a", "float64", [1.0, "x"])], TypeError, "column 'a': row 1: expected float or None, got str"),
        ([("a", "float64", [2**1024])], ValueError, "column 'a': row 0: int too large for float64"),
        ([("a", "bool", [True, 2])], ValueError, "column 'a': row 1: value out of range for bool"),
        ([("a", "bool", ["yes"])], TypeError, "column 'a': row 0: expected bool or None, got str"),
        ([("a", "string", ["x", 1])], TypeError, "column 'a': row 1: expected str or None, got int"),
        ([("a", "string", "abc")], TypeError, "column 'a': values must be a sequence of str"),
        ([("a", "string", ["\ud800"])], ValueError, "column 'a': string '\\ud800' cannot be encoded as UTF-8"),
        ([("a", "int64", 5)], TypeError, "column 'a': values must be a sequence or a buffer of int64"),
        ([("a", "int64")], TypeError, "columns[0] must be a (name, type, values) tuple"),
        ([("a", "int64", []), ("a", "int32", [])], ValueError, "duplicate column name 'a'"),
        ([(1, "int64", [])], TypeError, "column name must be str"),
        ([("a\0b", "int64", [])], ValueError, "column name must not contain NUL"),
    ],
)
def test_bad_columns_raise(tmp_path: Path, columns: list[Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as raised:
        write_parquet(tmp_path / "t.parquet", columns)
    assert message in str(raised.value)
    assert not (tmp_path / "t.parquet").exists()


def test_bad_options_raise(tmp_path: Path) -> None:
    columns: list[Column] = [("a", "int64", [1])]
    with pytest.raises(ValueError, match="compression must be 'zstd' or 'none'"):
        write_parquet(tmp_path / "t.parquet", columns, compression="snappy")
    with pytest.raises(ValueError, match="row_group_size must be at least 1"):
        write_parquet(tmp_path / "t.parquet", columns, row_group_size=0)
    with pytest.raises(TypeError, match="metadata value must be str"):
        write_parquet(tmp_path / "t.parquet", columns, metadata={"k": 1})
    with pytest.raises(TypeError):
        write_parquet(tmp_path / "t.parquet", columns, "zstd")  # options are keyword-only


@pytest.mark.parametrize("where", ["missing_dir/t.parquet", "."])
def test_unwritable_path_raises_oserror_naming_it(tmp_path: Path, where: str) -> None:
    path = tmp_path / where
    with pytest.raises(OSError, match="cannot open for writing") as raised:
        write_parquet(path, [("a", "int64", [1])])
    assert str(path) in str(raised.value)


@pytest.mark.subprocess
def test_failed_write_leaves_no_partial_file(tmp_path: Path) -> None:
    # A file size limit makes write() fail with EFBIG half-way (SIGXFSZ ignored), in a child process.
    code = f"""
import resource, signal
from scope.ingest import _native
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.RLIM_INFINITY))
try:
    _native.write_parquet({str(tmp_path / "big.parquet")!r}, [("a", "int64", range(2_000_000))], compression="none")
except OSError as exc:
    print(type(exc).__name__, exc)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert "write failed (File too large)" in done.stdout and str(tmp_path / "big.parquet") in done.stdout
    assert not (tmp_path / "big.parquet").exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_full_disk_raises_oserror() -> None:
    with pytest.raises(OSError, match="/dev/full: write failed"):
        write_parquet("/dev/full", [("a", "int64", list(range(1_000_000)))])
    assert Path("/dev/full").is_char_device()  # only regular files are removed after a failure


def test_repeated_writes_do_not_leak(tmp_path: Path) -> None:
    psutil = pytest.importorskip("psutil")
    columns: list[Column] = [
        ("a", "int64", list(range(50_000))),
        ("s", "string", [str(i % 500) for i in range(50_000)]),
        ("f", "float64", [None, 1.0] * 25_000),
    ]
    process = psutil.Process()

    def write_many() -> None:
        for _ in range(40):
            write_parquet(tmp_path / "t.parquet", columns, row_group_size=10_000)
            with pytest.raises(ValueError):
                write_parquet(tmp_path / "u.parquet", [*columns, ("bad", "int32", [2**40] * 50_000)])

    write_many()
    before = process.memory_info().rss
    write_many()
    write_many()
    assert process.memory_info().rss - before < 8 << 20
