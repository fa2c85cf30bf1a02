"""The native core inflates gzip traces with ISA-L when built with it, and zlib takes over from the start
of the file at any sign of damage: every file, intact or damaged, reads as with zlib alone (report,
pairs and every row), and an intact one never leaves the fast path."""

from __future__ import annotations

import gzip
import json
import os
import random
import struct
import zlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from scope.ingest.dispatch import native_enabled

if not native_enabled():
    if os.environ.get("SCOPE_REQUIRE_NATIVE") == "1":
        pytest.fail("the native ingest core (scope.ingest._native) is not built", pytrace=False)
    pytest.skip("the native ingest core is not built (no C compiler?)", allow_module_level=True)

from scope.ingest import _native  # after the skip: the module may not be built

# ISA-L is optional (setup.sh installs libisal-dev only as root); where its headers are on the machine,
# as in CI, `make test` requires the core to have been built with it.
ISAL_ON_MACHINE = Path("/usr/include/isa-l/igzip_lib.h").exists()
REQUIRED = ISAL_ON_MACHINE and os.environ.get("SCOPE_REQUIRE_NATIVE") == "1"
pytestmark = pytest.mark.skipif(
    not _native.has_fast_inflate() and not REQUIRED, reason="the native core was built without ISA-L (libisal-dev)"
)


def test_the_core_is_built_with_isal_where_the_machine_has_it() -> None:
    """setup.py links ISA-L when it finds it; a probe that fails silently loses the fast inflater."""
    assert _native.has_fast_inflate()


def _body(events: int, seed: int = 0) -> bytes:
    """A trace of `events` kernels; kernel names random enough that a large one stays large compressed."""
    rng = random.Random(seed)
    # The bytes json.dumps(trace, indent=1) writes, spelled out: its indenting encoder is pure Python (2.8 s
    # of these tests' 6); test_the_body_is_the_trace_as_json_writes_it holds the two equal.
    event = (
        '  {\n   "ph": "X",\n   "cat": "kernel",\n   "name": "k%x",\n   "ts": %d,\n'
        '   "dur": 2,\n   "pid": 0,\n   "tid": 7\n  }'
    )
    events_text = ",\n".join(event % (rng.getrandbits(24), i * 3) for i in range(events))
    head = '{\n "schemaVersion": 1,\n "distributedInfo": {\n  "rank": 0,\n  "world_size": 1\n },\n "traceEvents": ['
    return (head + (f"\n{events_text}\n ]\n}}" if events else "]\n}")).encode()


def _body_as_json_writes_it(events: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    trace = {
        "schemaVersion": 1,
        "distributedInfo": {"rank": 0, "world_size": 1},
        "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": f"k{rng.getrandbits(24):x}", "ts": i * 3, "dur": 2, "pid": 0, "tid": 7}
            for i in range(events)
        ],
    }
    return json.dumps(trace, indent=1).encode()


def test_the_body_is_the_trace_as_json_writes_it() -> None:
    for events, seed in ((0, 0), (1, 0), (300, 5)):
        assert _body(events, seed) == _body_as_json_writes_it(events, seed)
    assert json.loads(_body(3))["traceEvents"][2]["ts"] == 6


def _member(body: bytes, *, extra: bytes = b"", name: bytes = b"", comment: bytes = b"", hcrc: int = -1) -> bytes:
    """One gzip member with the optional header fields (RFC 1952): FEXTRA, FNAME (the gzip tool writes
    it), FCOMMENT and FHCRC (hcrc: -1 none, 0 right, else XORed into the right one)."""
    flags = (4 if extra else 0) | (8 if name else 0) | (16 if comment else 0) | (2 if hcrc >= 0 else 0)
    head = b"\x1f\x8b\x08" + bytes([flags]) + b"\0\0\0\0\0\x03"
    if extra:
        head += struct.pack("<H", len(extra)) + extra
    head += name + b"\0" if name else b""
    head += comment + b"\0" if comment else b""
    if hcrc >= 0:
        head += struct.pack("<H", (zlib.crc32(head) & 0xFFFF) ^ hcrc)
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    return (
        head + deflate.compress(body) + deflate.flush() + struct.pack("<II", zlib.crc32(body), len(body) & 0xFFFFFFFF)
    )


def _read(path: Path, fast: bool) -> tuple[dict, list, dict]:
    """What a read gives: its report, the (cat, name) pairs and every row's columns as written."""
    was = _native.set_fast_inflate(fast)
    try:
        table = _native.RankTable()
        found = table.read(str(path), 0)
        pairs = table.pairs()
        table.finish(bytes(len(pairs)), bytes(len(pairs)))
        rows: dict = {}
        if len(table):
            out = path.with_name(f"{path.name}.{int(fast)}.parquet")
            table.write_events(str(out), 0, ["kernel"], bytes(len(pairs)))
            rows = pq.read_table(out).to_pydict()
        return found, pairs, rows
    finally:
        _native.set_fast_inflate(was)


def _intact(body: bytes) -> dict[str, bytes]:
    """Well-formed files: one member, several, stored blocks, an empty member, every optional header field."""
    third = len(body) // 3
    return {
        "one member": gzip.compress(body, compresslevel=6),
        "three members": b"".join(
            gzip.compress(part) for part in (body[:third], body[third : 2 * third], body[2 * third :])
        ),
        "stored blocks": gzip.compress(body, compresslevel=0),
        "empty member first": gzip.compress(b"") + gzip.compress(body),
        "file name (as the gzip tool writes)": _member(body, name=b"rank0.json"),
        "extra field, comment, header CRC": _member(body, extra=b"SC\x02\x00ok", comment=b"scope", hcrc=0),
    }


def _damaged(body: bytes, seed: int) -> dict[str, bytes]:
    """Cut, flipped bytes (header and CRC trailer included), junk after the end, a wrong header CRC."""
    one = gzip.compress(body, compresslevel=6)
    members = _intact(body)["three members"]
    out = {"junk after the end": one + b"\x00\x01junk", "second member cut": members[: len(members) - 200]}
    out["header CRC wrong"] = _member(body, name=b"x.json", hcrc=0x5A5A)
    rng = random.Random(seed)
    for k, cut in enumerate(sorted(rng.sample(range(1, len(one)), 12))):
        out[f"cut at {cut} ({k})"] = one[:cut]
    for k in range(16):
        data = bytearray(one)
        at = rng.randrange(0, 10) if k < 4 else rng.randrange(10, len(data))  # the header, then anywhere
        data[at] ^= 1 << rng.randrange(8)
        out[f"bit flipped at {at} ({k})"] = bytes(data)
    second = len(gzip.compress(body[: len(body) // 3])) + 3  # the second member's flags
    for bit in range(8):  # every header flag, the reserved ones that only zlib refuses included
        for at, source in ((3, one), (second, members)):
            data = bytearray(source)
            data[at] ^= 1 << bit
            out[f"header flag {bit} flipped at {at}"] = bytes(data)
    crc = bytearray(one)
    crc[-6] ^= 0xFF  # the member's CRC32: every byte inflates, the check fails at the end
    out["bad CRC"] = bytes(crc)
    return out


# the larger file inflates for seconds: the slow tier
@pytest.mark.parametrize(
    "events",
    [pytest.param(6000, id="small"), pytest.param(40_000, id="larger than a read and a fill", marks=pytest.mark.slow)],
)
def test_isal_reads_every_file_as_zlib_does(tmp_path: Path, events: int) -> None:
    body = _body(events)
    variants = {**_intact(body), **_damaged(body, seed=events)}
    if events > 6000:  # inflated past FILL_BYTES (4 MB) from more than one READ_BLOCK (256 KB)
        assert len(body) > 4 << 20 and len(variants["one member"]) > 256 << 10
    for name, data in variants.items():
        path = tmp_path / "rank0.json.gz"
        path.write_bytes(data)
        fast, alone = _read(path, True), _read(path, False)
        assert fast == alone, name


def test_intact_files_are_never_handed_to_zlib(tmp_path: Path) -> None:
    """zlib's taking over is correct on any file, so only this count shows the fast path being lost."""
    path = tmp_path / "rank0.json.gz"
    for body in (_body(6000), _body(40_000, seed=1)):
        for name, data in _intact(body).items():
            path.write_bytes(data)
            before = _native.inflate_takeovers()
            _read(path, True)
            assert _native.inflate_takeovers() == before, name
    path.write_bytes(gzip.compress(_body(6000))[:-100])
    before = _native.inflate_takeovers()
    _read(path, True)
    assert _native.inflate_takeovers() == before + 1


def test_bad_crc_is_reported_after_isal_gave_every_byte(tmp_path: Path) -> None:
    """The fast path is not trusted on the check it fails: zlib re-reads and words the problem."""
    one = bytearray(gzip.compress(_body(40_000)))  # several fills: ISA-L's bytes are out before the check
    one[-6] ^= 0xFF
    path = tmp_path / "rank0.json.gz"
    path.write_bytes(bytes(one))
    before = _native.inflate_takeovers()
    found, _, rows = _read(path, True)
    assert _native.inflate_takeovers() == before + 1
    assert len(rows["ts_ns"]) == 40_000
    assert "incorrect data check" in found["gzip_msg"], found
    with pytest.raises(zlib.error, match="incorrect data check"):  # zlib's own words for it
        zlib.decompressobj(wbits=31).decompress(bytes(one))
