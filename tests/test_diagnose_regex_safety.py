"""Every regular expression the diagnose package ships passes scope's own backtracking check
(scope/regex_safety.py), which until now ran only on the patterns users give: lead54's mpirun command line
(knowledge/launcher_env.COMMAND) took 33.6 s on one 100,000-character line and the check would have refused it.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
from collections.abc import Iterator

import scope.analyzers.diagnose as diagnose
from scope.analyzers.diagnose.knowledge import launcher_env
from scope.analyzers.diagnose.knowledge.line_shapes import shell_settings
from scope.analyzers.diagnose.readers import signature_scan

from scope.regex_safety import backtracking_risk


def _patterns_in(value: object, depth: int = 0) -> Iterator[re.Pattern[str]]:
    """The compiled patterns a module-level value holds: itself, or inside its tuples, lists, dicts and dataclass
    rows (a table of markers), two levels down."""
    if isinstance(value, re.Pattern):
        yield value
    elif depth < 2 and isinstance(value, (tuple, list, frozenset, set)):
        for item in value:
            yield from _patterns_in(item, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for item in value.values():
            yield from _patterns_in(item, depth + 1)
    elif depth < 2 and hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            field = getattr(value, name, None)
            if name == "pattern" and isinstance(field, str):  # a table row's pattern, compiled where it is used
                yield re.compile(field)
            else:
                yield from _patterns_in(field, depth + 1)


def _shipped_patterns() -> Iterator[tuple[str, str]]:
    for info in pkgutil.walk_packages(diagnose.__path__, diagnose.__name__ + "."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            for pattern in _patterns_in(value):
                yield f"{info.name}.{name}", pattern.pattern
    for row in signature_scan.compiled():
        s = row.sig
        for pattern in (*s.patterns, s.ranks_re, s.before_re, s.fields_re, s.context_re):
            if pattern:
                yield f"signature row {s.id}", pattern


def test_no_pattern_the_diagnose_package_ships_can_backtrack_exponentially() -> None:
    found = list(_shipped_patterns())
    assert len(found) > 500  # the walk reaches the modules and the signature table
    risky = sorted({where for where, pattern in found if backtracking_risk(pattern)})
    assert not risky, risky


def test_lead54s_command_line_shapes_read_a_long_line_in_linear_time() -> None:
    # the review's measurements: 33.6 s and 30.6 s on these lines before the patterns were made possessive
    t0 = time.process_time()
    assert not list(launcher_env.COMMAND.finditer("export a=" + ";" * 100_000))
    assert launcher_env.PREFIXED.search("A=1 " * 25_000 + "mpirunx") is None
    assert not [s for s in shell_settings("A=1 " * 25_000 + "x") if s[0] != "A"]
    assert time.process_time() - t0 < 1.0
