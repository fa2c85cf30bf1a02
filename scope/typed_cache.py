"""functools.lru_cache that keeps the cached function's signature for the type checker.

typeshed types `lru_cache(...)(f)` as `_lru_cache_wrapper[T]`, whose `__call__` takes any hashable arguments:
mypy checks what a cached function returns but not what its callers pass it. `typed_lru_cache` is lru_cache
itself at run time (no wrapper call on the hot rows it caches), typed as returning the function unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])


def typed_lru_cache(maxsize: int) -> Callable[[F], F]:
    """`@lru_cache(maxsize=...)` as mypy sees the function it caches (its cache_clear is not typed: none is called)."""
    return cast(Callable[[F], F], lru_cache(maxsize=maxsize))
