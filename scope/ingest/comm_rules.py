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

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.config import config_tables
from scope.errors import EXIT_INPUT, EXIT_USAGE, ScopeError
from scope.ingest.classify import Rules, UserRule
from scope.op_names import canonical_op
from scope.regex_safety import backtracking_risk, refuse_message

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
    except (re.error, RecursionError, OverflowError) as exc:
        message = f"{origin}: communication-kernel rule {text!r} is not a valid regular expression ({exc})"
        raise ScopeError(message, code) from None
    risk = backtracking_risk(pattern)
    if risk:  # matched against every kernel name, and template kernel names run to thousands of characters
        raise ScopeError(f"{origin}: communication-kernel rule {refuse_message(pattern, risk)}", code)
    return UserRule(pattern=pattern, op=op, origin=origin)


def load_rules(inputs: Inventory, cli: list[str] | None = None) -> Rules:
    """The rules for ingesting PATH: the command line's, then its config file's (found in PATH's
    inventory, scope.inputs)."""
    rules = [parse_rule(r) for r in cli or []]
    config = find_config(inputs)
    if config is not None:
        file, entries = config
        rules.extend(parse_rule(e, origin=str(file)) for e in entries)
    return Rules(tuple(rules))


def find_config(inputs: Inventory) -> tuple[Path, list[str]] | None:
    """(file, its comm_kernels entries) of the first config file that has some, or None."""
    for file, table in config_tables(inputs):
        entries = _entries(file, table)
        if entries:
            return file, entries
    return None


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
