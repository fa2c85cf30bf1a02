"""Terminal escapes in logs are stripped before matching (a coloured rank prefix still names the rank) and
never reach the user's terminal (title, clear screen, hyperlinks)."""

from __future__ import annotations

from pathlib import Path

from scope.cli import main

ESC = "\x1b"
HOSTILE = (
    f"{ESC}]0;owned title\x07{ESC}[2J{ESC}[H"  # set the title, clear the screen
    f"{ESC}]8;;https://example.invalid/{ESC}\\click{ESC}]8;;{ESC}\\\n"  # a hyperlink
)
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB"


def test_escapes_are_stripped_before_matching_and_printing(tmp_path: Path, capsys) -> None:
    lines = [f"{ESC}[32m[rank{r}]:{ESC}[0m step 10 loss 0.1" for r in range(4)]
    lines.append(f"{ESC}[31m[rank3]:{ESC}[0m {ESC}[1m{OOM}{ESC}[0m")
    (tmp_path / "job.log").write_text(HOSTILE + "\n".join(lines) + "\n")
    main(["diagnose", str(tmp_path)])
    out = capsys.readouterr()
    assert ESC not in out.out and ESC not in out.err and "\x07" not in out.out
    assert "ROOT CAUSE [oom" in out.out and "rank 3" in out.out, out.out


def test_warnings_quoting_brackets_and_escapes_print_as_text(tmp_path: Path, capsys) -> None:
    from scope.cli.common import print_warnings

    print_warnings([f"rank0.log: [/bold] odd {ESC}[2J text [red]"], [])
    err = capsys.readouterr().err
    assert "[/bold] odd  text [red]" in err.replace(f"{ESC}[2J", "") and ESC + "[2J" not in err
