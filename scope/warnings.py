"""Warnings about the inputs, typed: the file, what is wrong with it, which bytes, what the analysis did
about it, and whether part of the input went unread.

`partial` is said by the code that saw the problem (a reader that stopped at a cut, a skipped region of
malformed events, a file it could not open), never guessed later from the words of the message: a run
with any partial warning exits EXIT_PARTIAL (4), one whose warnings are only notes exits 0. The text a
warning renders to is the sentence users read on the terminal and in analysis.json's "warnings" list
(that list stays strings: the JSON contract of `scope analyze --json`); its "warning_records" list holds
the same warnings as records (to_dict), so that an analysis read back from the store keeps what each
said, and whether the run is partial.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class InputWarning:
    """One problem with one input. Renders as 'FILE: WHAT; CONSEQUENCE' (each part only when given)."""

    file: str  # the input it is about ("" when it is about no one file: a missing rank, the run as a whole)
    what: str  # what is wrong, one sentence without the file name
    byte_range: tuple[int, int] | None = None  # the bytes concerned, when the reader knows them
    consequence: str = ""  # what the analysis did about it ("salvaged the 812 events before byte 4096")
    partial: bool = False  # part of the input was not read as written: the result is partial (exit 4)

    def __str__(self) -> str:
        text = f"{self.file}: {self.what}" if self.file else self.what
        return f"{text}; {self.consequence}" if self.consequence else text

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "what": self.what,
            "byte_range": list(self.byte_range) if self.byte_range else None,
            "consequence": self.consequence,
            "partial": self.partial,
        }

    @classmethod
    def from_json(cls, value: Any) -> InputWarning:
        """From to_dict's form, or from a plain sentence (a store or analysis written before warnings had
        types: a note, since what it said can no longer be told apart without reading its words)."""
        if isinstance(value, InputWarning):
            return value
        if not isinstance(value, dict):
            return note(str(value))
        span = value.get("byte_range")
        return cls(
            file=str(value.get("file") or ""),
            what=str(value.get("what") or ""),
            byte_range=(int(span[0]), int(span[1])) if isinstance(span, (list, tuple)) and len(span) == 2 else None,
            consequence=str(value.get("consequence") or ""),
            partial=bool(value.get("partial")),
        )


def note(text: str) -> InputWarning:
    """A warning whose producer gives one sentence and loses nothing (the run is complete)."""
    return InputWarning(file="", what=text)


def unread(text: str) -> InputWarning:
    """An input (or part of one) that could not be read, said as one sentence: the result is partial."""
    return InputWarning(file="", what=text, partial=True)


def unread_file(file: str, text: str) -> InputWarning:
    """An input its reader could not read, said as 'FILE: what' (a ScopeError's message, a shared sentence
    maker's): the record of FILE, the sentence unchanged."""
    head = f"{file}: "
    if file and text.startswith(head):
        return InputWarning(file=file, what=text[len(head) :], partial=True)
    return unread(text)


def as_warnings(items: Iterable[InputWarning | str], partial: bool = False) -> list[InputWarning]:
    """Records as they are; sentences from producers that give strings (the boundary adapter), as notes, or
    as unread inputs when the producer says that is what all of them are (`partial`)."""
    return [w if isinstance(w, InputWarning) else unread(w) if partial else note(w) for w in items]


def any_partial(warnings: Iterable[InputWarning]) -> bool:
    return any(w.partial for w in warnings)


def texts(warnings: Iterable[InputWarning | str]) -> list[str]:
    """The sentences, as the terminal and analysis.json show them."""
    return [str(w) for w in warnings]


def to_records(warnings: Iterable[InputWarning]) -> list[dict[str, Any]]:
    """The warnings as analysis.json's "warning_records" keep them (file, what, byte_range, consequence, partial)."""
    return [w.to_dict() for w in warnings]


def saved_warnings(records: Any, sentences: Any) -> list[InputWarning]:
    """The warnings of a saved analysis: its records where it has them; a file written before they were
    kept has its sentences alone, read back as notes (what each said of partial is lost with its type)."""
    if isinstance(records, list):
        return [InputWarning.from_json(w) for w in records]
    return [InputWarning.from_json(w) for w in sentences or []]
