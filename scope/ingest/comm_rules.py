"""The user's communication-kernel rules: `--comm-kernel REGEX[=OP]` and `comm_kernels` in a config file.

For in-house kernels the catalog (scope.ingest.comm_kernels) cannot know. Config files, first found:
`scope.toml` in the run directory (or beside a single trace file), else `[tool.scope]` in a
`pyproject.toml` of the run directory or the current directory:

    comm_kernels = ["my_fused_a2a_kernel=all_to_all", "ring_allreduce_v2"]

Rules from the command line come first, then the config file's. OP is one of the canonical ops
(all_reduce, all_gather, reduce_scatter, all_to_all, dispatch, combine, broadcast, barrier,
send_recv, signal, ...); without it the op is read from the kernel name when it says one.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.errors import EXIT_INPUT, EXIT_USAGE, ScopeError
from scope.ingest.classify import Rules, UserRule
from scope.op_names import canonical_op

if TYPE_CHECKING:
    from scope.inputs import Inventory

_OP_SUFFIX = re.compile(r"^(.*)=([A-Za-z_]+)$")


def parse_rule(text: str, origin: str = "--comm-kernel") -> UserRule:
    """'REGEX=OP' or 'REGEX' -> UserRule; a bad regular expression is an error naming the rule."""
    text = text.strip()
    code = EXIT_USAGE if origin == "--comm-kernel" else EXIT_INPUT  # the command line, or a config file
    found = _OP_SUFFIX.match(text)
    pattern, op = (found.group(1), canonical_op(found.group(2))) if found else (text, "")
    if not pattern:
        raise ScopeError(f"{origin}: empty communication-kernel rule {text!r} (expected REGEX[=OP])", code)
    try:
        re.compile(pattern)
    except re.error as exc:
        message = f"{origin}: communication-kernel rule {text!r} is not a valid regular expression ({exc})"
        raise ScopeError(message, code) from None
    return UserRule(pattern=pattern, op=op, origin=origin)


def load_rules(path: Path, cli: list[str] | None = None, inputs: Inventory | None = None) -> Rules:
    """The rules for ingesting PATH: the command line's, then its config file's (found in PATH's
    inventory, scope.inputs, when given)."""
    rules = [parse_rule(r) for r in cli or []]
    config = find_config(Path(path), inputs)
    if config is not None:
        file, entries = config
        rules.extend(parse_rule(e, origin=str(file)) for e in entries)
    return Rules(tuple(rules))


def find_config(path: Path, inputs: Inventory | None = None) -> tuple[Path, list[str]] | None:
    """(file, its comm_kernels entries) of the first config file that has some, or None."""
    for file, table in config_tables(path, inputs):
        entries = _entries(file, table)
        if entries:
            return file, entries
    return None


def config_tables(path: Path, inputs: Inventory | None = None) -> Iterator[tuple[Path, dict[str, Any]]]:
    """(file, scope's table in it) of each config file for PATH in the order they are tried: scope.toml
    beside the input, then [tool.scope] of pyproject.toml beside it and in the current folder. The input's
    own files are those its inventory lists (scope.inputs), each read once whoever asks (the comm-kernel
    rules here, diagnose's signature rows)."""
    folder = path if path.is_dir() else path.parent

    def beside(name: str) -> Path | None:
        if inputs is not None and inputs.layout != "file":
            return inputs.config(name)
        candidate = folder / name
        return candidate if candidate.is_file() else None

    def read(file: Path) -> dict[str, Any]:
        return inputs.read_once(file, _read_toml) if inputs is not None else _read_toml(file)

    scope_toml = beside("scope.toml")
    if scope_toml is not None:
        yield scope_toml, read(scope_toml)
    here = Path.cwd() / "pyproject.toml"
    mine = beside("pyproject.toml")
    for candidate in dict.fromkeys(p for p in (mine, here if here.is_file() else None) if p is not None):
        if candidate is here and mine is not None and here.resolve() == mine.resolve():
            continue  # the input's folder is the current folder: read once
        tool = read(candidate).get("tool", {})
        table = tool.get("scope", {}) if isinstance(tool, dict) else {}
        yield candidate, table if isinstance(table, dict) else {}


def _read_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - 3.10
        if importlib.util.find_spec("tomli") is None:
            raise ScopeError(f"{path}: reading its [tool.scope] table on Python 3.10 needs tomli: pip install tomli")
        import tomli as tomllib
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ScopeError(f"{path}: cannot read the config file ({exc})") from None


def _entries(path: Path, table: Any) -> list[str]:
    """comm_kernels as 'REGEX[=OP]' strings; tables {pattern = ..., op = ...} are accepted too."""
    raw = table.get("comm_kernels", []) if isinstance(table, dict) else []
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        raise ScopeError(f"{path}: comm_kernels must be a list of 'REGEX[=OP]' strings")
    out = []
    for entry in raw:
        if isinstance(entry, dict) and isinstance(entry.get("pattern"), str):
            op = entry.get("op")
            out.append(f"{entry['pattern']}={op}" if isinstance(op, str) and op else entry["pattern"])
        elif isinstance(entry, str):
            out.append(entry)
        else:
            raise ScopeError(f"{path}: comm_kernels entry {entry!r} is not 'REGEX[=OP]' or {{pattern, op}}")
    return out


def rules_key(rules: Rules) -> list[list[str]]:
    """The rules as they enter the store's cache key."""
    return [[r.pattern, r.op] for r in rules.user]
