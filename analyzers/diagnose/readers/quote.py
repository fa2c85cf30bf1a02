"""A log line quoted short enough for a finding, without losing what makes it differ (readers quote lines in
anomalies; words/ quote them in summaries)."""

from __future__ import annotations

import re

_DECISIVE = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\d+\.\d+(?:\.\d+)?|'[^']{2,40}'")


def shorten(text: str, limit: int = 200) -> str:
    """Cut the quote, never the difference: a long line keeps its head and its tail (where error messages put
    the reason: '... failed : Connection refused', '... requires NCCL >= 2.19'), at word boundaries, and the
    decisive tokens of the part left out (environment variables, versions, quoted error names)."""
    if len(text) <= limit:
        return text
    head_n, tail_n = int(limit * 0.55), int(limit * 0.35)
    head = text[:head_n].rsplit(" ", 1)[0] if " " in text[:head_n] else text[:head_n]
    tail = text[-tail_n:].split(" ", 1)[-1] if " " in text[-tail_n:] else text[-tail_n:]
    middle = text[len(head) : len(text) - len(tail)]
    kept = [t for t in dict.fromkeys(_DECISIVE.findall(middle)) if t not in head and t not in tail][:3]
    gap = f" … {' '.join(kept)} … " if kept else " … "
    return f"{head}{gap}{tail}"
