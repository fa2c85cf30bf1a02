"""Whether a user's regular expression can take exponential time on one line (catastrophic backtracking).

Python's `re` is a backtracking matcher with no time limit and cannot be interrupted from another thread:
`SITECHECK (a+)+$` in a site's signature row took minutes on one 45-character line of `a`s, doubling with
each character. So the patterns users give scope (signature rows, communication-kernel rules) are checked
when read, and a pattern of the shape that backtracks exponentially is refused with the reason and the
fix, like any invalid row. The shape: a repeat whose body can match in more than one way and that is
itself repeated without bound - a variable repeat inside an unbounded one (`(a+)+`, `(\\w+\\s?)*`,
`(a{1,9})*`), or alternatives of which one is a prefix of another under an unbounded repeat (`(a|aa)+`).
An atomic group `(?>...)` or a possessive quantifier (`a++`, Python 3.11+) never backtracks into its body,
so `(?>a+)+` passes: that is the fix the message suggests. This is a check of shape, not a proof: it
refuses the classic forms; patterns scope ships are its own and are not checked here.
"""

from __future__ import annotations

import re
import sys
from typing import Any

if sys.version_info >= (3, 11):
    from re import _compiler as compiler
    from re import _constants as C
    from re import _parser as parser
else:  # pragma: no cover - 3.10
    import sre_compile as compiler
    import sre_constants as C
    import sre_parse as parser

_REPEATS = {C.MAX_REPEAT, C.MIN_REPEAT}
_ATOMIC = {getattr(C, "ATOMIC_GROUP", None), getattr(C, "POSSESSIVE_REPEAT", None)} - {None}


def backtracking_risk(pattern: str) -> str:
    """Why PATTERN may backtrack exponentially ('' when its shape is safe, or when it does not compile:
    re.compile says why then)."""
    try:
        tree = parser.parse(pattern)
    except Exception:  # re.error, RecursionError on absurd nesting: the caller's compile reports it
        return ""
    return _tree_risk(tree)


def check_pattern(pattern: str) -> str:
    """'' for a pattern that compiles and is safe; else why not (re's error, or backtracking_risk's reason
    with the fix). One parse for both: 40,000 rows of a site's config are checked in seconds."""
    try:
        tree = parser.parse(pattern)
        compiler.compile(tree, 0)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        return f"{pattern!r} is not a valid regular expression ({exc})"
    risk = _tree_risk(tree)
    return refuse_message(pattern, risk) if risk else ""


def _tree_risk(tree: Any) -> str:
    try:
        return _risk(list(tree), tree.state)
    except Exception:  # a parse tree this check does not know: compile and match it as it is
        return ""


RISK = "a part that can match in several ways inside a repeat without bound (as in (a+)+ or (a|aa)+)"
MANY = 5  # a bounded repeat this long of such a part is as bad: (.*a){12} tries n^12 splits


def _risk(items: list[tuple[Any, Any]], state: Any) -> str:
    for op, av in items:
        if op in _ATOMIC:
            continue  # no backtracking into an atomic body: safe whatever repeats it
        if op in _REPEATS:
            _, hi, body = av
            if (hi == C.MAXREPEAT or hi >= MANY) and _ambiguous(list(body), state):
                return RISK
            found = _risk(list(body), state)
        else:
            found = next((_risk(list(sub), state) for sub in _children(op, av) if _risk(list(sub), state)), "")
        if found:
            return found
    return ""


def _children(op: Any, av: Any) -> list[Any]:
    if op == C.SUBPATTERN:
        return [av[-1]]
    if op == C.BRANCH:
        return list(av[1])
    if op in (C.ASSERT, C.ASSERT_NOT):
        return [av[1]]
    if op == C.GROUPREF_EXISTS:
        return [part for part in av[1:] if part]
    return []


def _ambiguous(body: list[tuple[Any, Any]], state: Any) -> bool:
    r"""Whether one pass of an unbounded repeat's BODY can end in several places that the next pass can also
    start from: it holds a variable part (a repeat of variable count, alternatives of which one may be
    empty) and no character every pass must match that no variable part can (a separator such as the
    dot of [a-z]+(\.[a-z]+)*)."""
    while len(body) == 1 and body[0][0] == C.SUBPATTERN:  # (...)+: the group's own items
        body = list(body[0][1][-1])
    variable = list(_variable_parts(body))
    if not variable:
        return False
    separators = [item for item in body if item[0] in (C.LITERAL, C.IN)]
    return not any(all(not _may_match(v, sep, state) for v in variable) for sep in separators)


def _variable_parts(items: list[tuple[Any, Any]]) -> Any:
    for op, av in items:
        if op in _ATOMIC:
            continue
        if (
            (op in _REPEATS and av[0] != av[1])
            or (op == C.BRANCH and any(not alt for alt in av[1]))
            or (op == C.BRANCH and _overlapping(av[1]))
        ):
            yield op, av
        else:
            for sub in _children(op, av):
                yield from _variable_parts(list(sub))
            if op in _REPEATS:
                yield from _variable_parts(list(av[2]))


def _overlapping(alternatives: list[Any]) -> bool:
    """Alternatives two of which may start with the same character (by their literal first characters;
    any other start counts as overlapping)."""
    firsts = []
    for alt in alternatives:
        if not alt or alt[0][0] != C.LITERAL:
            return True
        firsts.append(alt[0][1])
    return len(firsts) != len(set(firsts))


def _may_match(part: tuple[Any, Any], sep: tuple[Any, Any], state: Any) -> bool:
    """Whether the variable PART may consume the separator SEP (a literal or a class): tested on the
    separator's characters (a class's literals and range ends); a part that is not one character class
    repeated, or alternatives of literals, counts as matching anything."""
    chars = [sep[1]] if sep[0] == C.LITERAL else _class_chars(sep[1])
    if not chars:
        return True
    op, av = part
    if op == C.BRANCH:
        texts = [
            [x for o, x in alt if o == C.LITERAL] if all(o == C.LITERAL for o, _ in alt) else None for alt in av[1]
        ]
        if any(t is None for t in texts):
            return True
        return any(c in t for c in chars for t in texts if t is not None)
    body = list(av[2])
    if len(body) != 1 or body[0][0] not in (C.LITERAL, C.NOT_LITERAL, C.IN, C.ANY):
        return True
    one = compiler.compile(parser.SubPattern(state, body), 0)
    return any(one.fullmatch(chr(c)) for c in chars)


def _class_chars(items: list[tuple[Any, Any]]) -> list[int]:
    out: list[int] = []
    for op, av in items:
        if op == C.LITERAL:
            out.append(av)
        elif op == C.RANGE:
            out += [av[0], av[1]]
        else:
            return []  # a negated class or a category: too many characters to tell
    return out


def refuse_message(pattern: str, why: str) -> str:
    return (
        f"{pattern!r} can take exponential time on one line ({why}); write it so that each character "
        "can be matched one way only, e.g. with an atomic group (?>...) or a possessive quantifier (a++)"
    )
