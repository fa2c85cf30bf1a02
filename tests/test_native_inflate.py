"""The native core inflates gzip traces with ISA-L when built with it, and zlib takes over from the start
of the file at any sign of damage: every file, intact or not, reads exactly as with zlib alone."""

from __future__ import annotations

import gzip
import json
import os
import random
import zlib
from pathlib import Path

import pytest

from scope.ingest.dispatch import native_enabled

if not native_enabled():
    if os.environ.get("SCOPE_REQUIRE_NATIVE") == "1":
        pytest.fail("the native ingest core (scope.ingest._native) is not built", pytrace=False)
    pytest.skip("the native ingest core is not built (no C compiler?)", allow_module_level=True)

from scope.ingest import _native  # after the skip: the module may not be built

pytestmark = pytest.mark.skipif(
    not _native.has_fast_inflate() and os.environ.get("SCOPE_REQUIRE_NATIVE") != "1",
    reason="the native core was built without ISA-L (libisal-dev)",
)


def test_ci_builds_the_core_with_isal() -> None:
    """setup.sh installs libisal-dev; without it ingest silently loses its fast inflater."""
    assert _native.has_fast_inflate()


def _body(events: int) -> bytes:
    trace = {
        "schemaVersion": 1,
        "distributedInfo": {"rank": 0, "world_size": 1},
        "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": f"k{i % 7}", "ts": i * 3, "dur": 2, "pid": 0, "tid": 7}
            for i in range(events)
        ],
    }
    return json.dumps(trace, indent=1).encode()


def _read(path: Path, fast: bool) -> tuple[dict, int, list]:
    was = _native.set_fast_inflate(fast)
    try:
        table = _native.RankTable()
        found = table.read(str(path), 0)
        return found, len(table), table.pairs()
    finally:
        _native.set_fast_inflate(was)


def _variants(body: bytes) -> dict[str, bytes]:
    """Intact files of one and several members, and damaged ones: cut, flipped bytes (the CRC trailer
    included), junk after the end, an empty member."""
    one = gzip.compress(body, compresslevel=6)
    third = len(body) // 3
    members = b"".join(gzip.compress(part) for part in (body[:third], body[third : 2 * third], body[2 * third :]))
    stored = gzip.compress(body, compresslevel=0)
    out = {"one member": one, "three members": members, "stored blocks": stored}
    out["empty member first"] = gzip.compress(b"") + one
    out["junk after the end"] = one + b"\x00\x01junk"
    out["second member cut"] = members[: len(members) - 200]
    rng = random.Random(5)
    for k, cut in enumerate(sorted(rng.sample(range(10, len(one)), 12))):
        out[f"cut at {cut} ({k})"] = one[:cut]
    for k in range(12):
        data = bytearray(one)
        at = rng.randrange(10, len(data))
        data[at] ^= 1 << rng.randrange(8)
        out[f"bit flipped at {at} ({k})"] = bytes(data)
    crc = bytearray(one)
    crc[-6] ^= 0xFF  # the member's CRC32: every byte inflates, the check fails at the end
    out["bad CRC"] = bytes(crc)
    return out


def test_isal_reads_every_file_as_zlib_does(tmp_path: Path) -> None:
    body = _body(6000)
    for name, data in _variants(body).items():
        path = tmp_path / "rank0.json.gz"
        path.write_bytes(data)
        fast, alone = _read(path, True), _read(path, False)
        assert fast == alone, name


def test_bad_crc_is_reported_after_isal_gave_every_byte(tmp_path: Path) -> None:
    """The fast path is not trusted on the check it fails: zlib re-reads and words the problem."""
    one = bytearray(gzip.compress(_body(3000)))
    one[-6] ^= 0xFF
    path = tmp_path / "rank0.json.gz"
    path.write_bytes(bytes(one))
    found, rows, _ = _read(path, True)
    assert rows == 3000
    assert "incorrect data check" in found["gzip_msg"], found
    with pytest.raises(zlib.error, match="incorrect data check"):  # zlib's own words for it
        zlib.decompressobj(wbits=31).decompress(bytes(one))
