"""Every regular expression the diagnose package ships passes scope's own backtracking check
(scope/regex_safety.py), which until now ran only on the patterns users give: lead54's mpirun command line
(knowledge/launcher_env.COMMAND) took 33.6 s on one 100,000-character line and the check would have refused it.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
import time
from collections.abc import Iterator

import scope.analyzers.diagnose as diagnose
from scope.analyzers.diagnose.knowledge import launcher_env, parallel_layout, stages
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
    elif depth < 2 and (hasattr(value, "__dataclass_fields__") or hasattr(value, "_fields")):
        names = value.__dataclass_fields__ if hasattr(value, "__dataclass_fields__") else value._fields  # type: ignore[attr-defined]
        for name in names:
            field = getattr(value, name, None)
            if isinstance(field, str):  # any field of a table row may be a pattern compiled where it is used
                compiled = _compiled(field)
                if compiled is not None:
                    yield compiled
            else:
                yield from _patterns_in(field, depth + 1)


@functools.cache  # a table's rows repeat their fields: 51,548 strings, more than re's own cache of 512 holds
def _compiled(text: str) -> re.Pattern[str] | None:
    """A row's string field as the pattern it may be (prose fields compile too, as literal text, and cost nothing to
    check)."""
    try:
        return re.compile(text)
    except re.error:
        return None


@functools.cache
def _module_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(module.value, pattern) for every compiled pattern a module of the package holds: walked once for both checks."""
    out = []
    for info in pkgutil.walk_packages(diagnose.__path__, diagnose.__name__ + "."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            out += [(f"{info.name}.{name}", pattern) for pattern in _patterns_in(value)]
    return tuple(out)


def _shipped_patterns() -> Iterator[tuple[str, str]]:
    for where, pattern in _module_patterns():
        yield where, pattern.pattern
    for row in signature_scan.compiled():
        s = row.sig
        for pattern in (*s.patterns, s.ranks_re, s.before_re, s.fields_re, s.context_re):
            if pattern:
                yield f"signature row {s.id}", pattern


def test_no_pattern_the_diagnose_package_ships_can_backtrack_exponentially() -> None:
    found = list(_shipped_patterns())
    assert len(found) > 500  # the walk reaches the modules and the signature table
    risk = {pattern: backtracking_risk(pattern) for pattern in {pattern for _, pattern in found}}  # each text once
    risky = sorted({where for where, pattern in found if risk[pattern]})
    assert not risky, risky


# A pattern anchored at a line's start that opens with whitespace able to span lines ('^\\s*' under MULTILINE) starts
# at each line of a run of blank lines and spans the rest of the run: quadratic, which backtracking_risk does not
# flag (diag55's LOCAL_RANK row, compiled with re.M where it was used, took 25 s on a log of 20,000 blank lines).
# Every pattern compiled with re.M runs over 5,000 blank lines: that row took 0.4 s there, a linear pattern some
# microseconds. (A row's string field is checked by backtracking_risk above; its flags are the reader's.)
# The eleven found quadratic (or worse) when this test was written (internode_busbw._DEVICE_LINE 62 s,
# '^\\s*[#>]?\\s*' splitting the run two ways) now read line-start whitespace as '[^\\S\\n]*': the same lines
# match, with the same groups.
_BLANK_RUN = "\n" * 5_000


def _multiline_patterns() -> Iterator[tuple[str, re.Pattern[str]]]:
    for where, pattern in _module_patterns():
        if isinstance(pattern.pattern, str) and pattern.flags & re.M:
            yield where, pattern
    # the stage markers are compiled with re.M where a line is read (knowledge/stages._compiled), lazily: compile each
    for i, marker in enumerate(stages.MARKERS):
        yield f"stage marker {i} ({marker.stage}, {marker.emitter})", stages._compiled(i)


def test_no_multiline_pattern_is_quadratic_on_a_run_of_blank_lines() -> None:
    slow = []
    for where, pattern in _multiline_patterns():
        t0 = time.process_time()
        for _ in pattern.finditer(_BLANK_RUN):
            pass
        if time.process_time() - t0 > 0.1:
            slow.append(where)
    assert not slow, slow


def test_lead54s_command_line_shapes_read_a_long_line_in_linear_time() -> None:
    # the review's measurements: 33.6 s and 30.6 s on these lines before the patterns were made possessive
    t0 = time.process_time()
    assert not list(launcher_env.COMMAND.finditer("export a=" + ";" * 100_000))
    assert launcher_env.PREFIXED.search("A=1 " * 25_000 + "mpirunx") is None
    assert not [s for s in shell_settings("A=1 " * 25_000 + "x") if s[0] != "A"]
    assert time.process_time() - t0 < 1.0


def test_the_world_size_checks_fields_read_a_long_repeating_line_in_linear_time() -> None:
    # review59d2: the lazy run to the line's end from every start took 1.5 s on this 136,000-character line
    fields = next(
        r.fields_re for r in parallel_layout.PARALLEL_LAYOUT_SIGNATURES if "is not (?:divisible" in r.fields_re
    )
    line = "world_size (8) is not divisible by tensor_model_parallel_size (3) x " * 2000
    t0 = time.process_time()
    list(re.finditer(fields, line))
    assert time.process_time() - t0 < 0.2
