"""Where a quoted log was cut and where its lines start (reasoning/excerpt.py), shared by the silent-run models."""

from __future__ import annotations

from scope.analyzers.diagnose.reasoning.excerpt import CUT, CUT_NOTE, cut_after, line_start

TEXT = "first\nsecond\n[... 40 lines omitted ...]\nfourth\n"


def test_line_start_is_the_offset_of_each_line_and_the_end_past_the_last() -> None:
    assert [TEXT[line_start(TEXT, n) :].split("\n", 1)[0] for n in (1, 2, 4)] == ["first", "second", "fourth"]
    assert line_start(TEXT, 0) == 0
    assert line_start("no newline", 3) == len("no newline")


def test_a_cut_counts_only_with_lines_after_it() -> None:
    assert cut_after(TEXT, 0)
    assert not cut_after(TEXT, line_start(TEXT, 3))  # the marker's own line is not after it
    assert not cut_after("a\nb\n[... cut ...]\n", 0)  # a cut as the last line says nothing


def test_a_bare_ellipsis_line_is_a_cut_but_not_a_bracketed_note() -> None:
    assert CUT.match("  …  ") and CUT.match("...")
    assert not CUT_NOTE.match("...") and CUT_NOTE.match("[...truncated...]")
    assert not CUT.match("loading ... done")
