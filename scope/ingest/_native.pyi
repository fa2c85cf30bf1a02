# Type stub of the optional native ingest core (C: native/module.c, pqwrite_py.c, kineto_py.c), so mypy
# knows the module exists; the RankTable methods (read, pairs, finish, write_events, ...) stay Any.
from collections.abc import Sequence
from os import PathLike
from typing import Any

def write_parquet(
    path: str | bytes | PathLike[str] | PathLike[bytes],
    columns: Sequence[tuple[str, str, Sequence[Any]]],
    *,
    compression: str = ...,
    row_group_size: int = ...,
    metadata: dict[str, str] | None = ...,
) -> None: ...
def set_fast_inflate(on: bool) -> bool: ...
def has_fast_inflate() -> bool: ...
def inflate_takeovers() -> int: ...

class RankTable:
    def __init__(self) -> None: ...
    def __getattr__(self, name: str) -> Any: ...
