"""A labelled corpus of real failure logs, run through the diagnosis and scored.

Two sources (see ../shared/data/failure_corpus/README.md and failure_log_samples.txt):
  failure_corpus/*.txt   one case per file: a leading `# KEY: value` header (EXPECTED KINDS, optional
                         EXPECTED RANKS), then the log exactly as posted;
  failure_log_samples.txt `### GROUP:` headings, each with `# source:` blocks of real lines.
Each log is written alone as `job.log` into a fresh folder and diagnosed; the first failure finding
(severity above info) must have one of the expected kinds, `healthy` cases must give none.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.remedy_expectations import REMEDY_KEYWORDS
from benchmarks.remedy_fit import Fit, judge
from scope.finding import FAILURE_KINDS

# The header block: the leading lines matching this (the corpus README's definition).
_HEADER_LINE = re.compile(r"^# ([A-Z]{2,}[^:\n]*:|  )")
_KEY = re.compile(r"^# ([A-Z][A-Z ]+?)(?: \([^)]*\))?: ?(.*)$")

# Finding kind each heading of failure_log_samples.txt stands for (empty: a healthy log). A block whose
# source note says "desync" is ranks disagreeing on the collective; an Xid 45 "caused by previous Xid N"
# takes the class of Xid N; a block whose note names the OOM killer (a bare SIGKILL) may also be read as oom, as the
# fresh sets label such ends ('oom, crash').
SAMPLE_HEADING_KINDS: dict[str, tuple[str, ...]] = {
    "c10d_watchdog_timeout": ("timeout",),
    "nccl_remote_error_ib": ("network_fault",),
    "c10d_heartbeat_monitor": ("hang", "timeout"),
    "nccl_info_init_topology": ("healthy",),
    "nccl_warn_ib_completion_error": ("network_fault",),
    "nccl_system_error_socket": ("network_fault",),
    "nccl_crash_signal": ("crash",),
    "cuda_oom": ("oom",),
    "torchrun_elastic_failure": ("crash",),
    "xid_79_fallen_off_bus": ("hardware_fault",),
    "xid_48_dbe_and_xid_64_retirement": ("hardware_fault",),
    "xid_13_31_32_45_109": ("crash",),
    "xid_nvlink": ("hardware_fault",),
    "xid_119_gsp_timeout": ("hardware_fault",),
    "pcie_aer": ("hardware_fault",),
}


@dataclass
class Case:
    name: str
    log: str
    expected: tuple[str, ...]
    ranks: tuple[int, ...] | None = None
    source: str = ""
    remedy: str = ""

    @property
    def healthy(self) -> bool:
        return self.expected[:1] == ("healthy",)


@dataclass
class Outcome:
    case: Case
    got: str  # the first failure finding's kind, or "healthy"
    ranks: list[int]
    seconds: float
    summary: str = ""
    confidence: str | None = None
    suggestion: str = ""
    origin: str = ""  # the top finding's signature row, else its reading's code ('' where no failure finding)

    @property
    def printed(self) -> str:
        """The remedy the top finding prints: its suggestion, its summary where it has none."""
        return self.suggestion or self.summary

    @property
    def remedy_match(self) -> bool | None:
        """Whether the top finding's suggestion names an action of the case's REMEDY (None: nothing to score)."""
        actions = remedy_actions(self.case.remedy)
        if not actions or self.got == "healthy":
            return None if not actions else False
        said = _normal(f"{self.summary} {self.suggestion}")
        return any(any(_normal(word) in said for word in group) for group in actions)

    @property
    def remedy_fit(self) -> bool | None:
        """Whether the top finding's words meet every group of the case's row in remedy_expectations
        (None: a healthy control, or a case with no row)."""
        groups = REMEDY_KEYWORDS.get(self.case.name)
        if not groups or self.case.healthy:
            return None
        said = _normal(f"{self.summary} {self.suggestion}")
        return self.got != "healthy" and all(any(_normal(w) in said for w in group) for group in groups)

    def case_groups(self) -> str:
        return " and ".join("/".join(g) for g in REMEDY_KEYWORDS.get(self.case.name, ()))

    @property
    def correct(self) -> bool:
        return self.got in self.case.expected

    @property
    def ranks_exact(self) -> bool | None:
        if self.case.ranks is None:
            return None
        return sorted(self.ranks) == sorted(self.case.ranks)


@dataclass
class Scores:
    outcomes: list[Outcome] = field(default_factory=list)

    def _of(self, healthy: bool | None = None) -> list[Outcome]:
        return [o for o in self.outcomes if healthy is None or o.case.healthy == healthy]

    @property
    def top1(self) -> float:
        return sum(o.correct for o in self.outcomes) / max(1, len(self.outcomes))

    @property
    def silent_failures(self) -> list[Outcome]:
        """Failing logs that got no failure finding at all."""
        return [o for o in self._of(healthy=False) if o.got == "healthy"]

    @property
    def false_alarms(self) -> list[Outcome]:
        return [o for o in self._of(healthy=True) if o.got != "healthy"]

    @property
    def rank_cases(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.case.ranks is not None]

    @property
    def rank_accuracy(self) -> float:
        cases = self.rank_cases
        return sum(bool(o.ranks_exact) for o in cases) / max(1, len(cases))

    def per_kind(self) -> dict[str, tuple[int, int]]:
        """Expected (first-listed) kind -> (right, cases)."""
        out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for o in self.outcomes:
            row = out[o.case.expected[0]]
            row[0] += o.correct
            row[1] += 1
        return {k: (v[0], v[1]) for k, v in sorted(out.items())}

    def confusion(self) -> dict[tuple[str, str], int]:
        """(expected first kind, got) -> count."""
        return dict(Counter((o.case.expected[0], o.got) for o in self.outcomes))

    @property
    def remedy_cases(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.remedy_match is not None]

    @property
    def remedy_rate(self) -> float:
        cases = self.remedy_cases
        return sum(bool(o.remedy_match) for o in cases) / max(1, len(cases))

    @property
    def fit_cases(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.remedy_fit is not None]

    @property
    def fit_rate(self) -> float:
        """Remedy fit over the failing cases with a row in remedy_expectations (a wrong or silent case fails)."""
        cases = self.fit_cases
        return sum(bool(o.remedy_fit) for o in cases) / max(1, len(cases))

    def to_dict(self) -> dict[str, Any]:
        return {
            "remedy_fit_cases": len(self.fit_cases),
            "remedy_fit": round(self.fit_rate, 4),
            "remedy_fit_right": round(
                sum(bool(o.remedy_fit) for o in self.fit_cases if o.correct)
                / max(1, sum(o.correct for o in self.fit_cases)),
                4,
            ),
            "remedy_unfit": [o.case.name for o in self.fit_cases if not o.remedy_fit],
            "remedy_fit_per_case": {o.case.name: bool(o.remedy_fit) for o in self.fit_cases},
            "remedy_cases": len(self.remedy_cases),
            "remedy_match": round(self.remedy_rate, 4),
            "remedy_mismatches": [o.case.name for o in self.remedy_cases if not o.remedy_match],
            "cases": len(self.outcomes),
            "top1": round(self.top1, 4),
            "per_kind": {k: {"right": r, "cases": n} for k, (r, n) in self.per_kind().items()},
            "rank_cases": len(self.rank_cases),
            "rank_accuracy": round(self.rank_accuracy, 4),
            "silent_failures": [o.case.name for o in self.silent_failures],
            "false_alarms": [o.case.name for o in self.false_alarms],
            "wrong": [
                {"case": o.case.name, "expected": list(o.case.expected), "got": o.got, "summary": o.summary}
                for o in self.outcomes
                if not o.correct
            ],
            "seconds_per_case": round(sum(o.seconds for o in self.outcomes) / max(1, len(self.outcomes)), 4),
            "max_seconds": round(max((o.seconds for o in self.outcomes), default=0.0), 4),
        }


def strip_header(text: str) -> tuple[dict[str, str], str]:
    """The `# KEY: value` header block (keys without their parenthesised notes) and the log after it."""
    lines = text.split("\n")
    header: dict[str, str] = {}
    n = 0
    last_key = None
    while n < len(lines) and _HEADER_LINE.match(lines[n]):
        m = _KEY.match(lines[n])
        if m:
            last_key = m.group(1).strip()
            header[last_key] = m.group(2).strip()
        elif last_key:  # a continuation line ('#   ...')
            header[last_key] += " " + lines[n][1:].strip()
        n += 1
    return header, "\n".join(lines[n:])


def _ranks(value: str | None) -> tuple[int, ...] | None:
    if not value:
        return None
    found = tuple(int(x) for x in re.findall(r"\d+", value.split("(", 1)[0]))
    return found or None


def corpus_cases(folder: Path) -> list[Case]:
    cases = []
    for path in sorted(folder.glob("*.txt")):
        header, log = strip_header(path.read_text(encoding="utf-8", errors="replace"))
        kinds = tuple(k.strip() for k in header.get("EXPECTED KINDS", "").split(",") if k.strip())
        if not kinds:
            continue
        cases.append(
            Case(
                path.stem,
                log,
                kinds,
                _ranks(header.get("EXPECTED RANKS")),
                header.get("SOURCE", ""),
                header.get("REMEDY", ""),
            )
        )
    return cases


def sample_cases(path: Path) -> list[Case]:
    """One case per `# source:` block of failure_log_samples.txt."""
    text = path.read_text(encoding="utf-8", errors="replace")
    cases = []
    for group in re.split(r"^### GROUP: ", text, flags=re.M)[1:]:
        heading, body = group.split("\n", 1)
        name = heading.split()[0]
        for i, block in enumerate(re.split(r"^# source: ", body, flags=re.M)[1:]):
            note, rest = block.split("\n", 1) if "\n" in block else (block, "")
            lines = [ln for ln in rest.splitlines() if ln.strip() and not ln.startswith("#")]
            if not lines:
                continue
            if "desync" in note:
                kinds: tuple[str, ...] = ("collective_mismatch",)
            elif "caused by previous Xid" in rest:
                kinds = ("hardware_fault",)
            else:
                kinds = SAMPLE_HEADING_KINDS.get(name, ("crash",))
            if "OOM killer" in note and "oom" not in kinds:
                kinds += ("oom",)
            cases.append(Case(f"samples:{name}#{i}", "\n".join(lines) + "\n", kinds, None, note.split()[0]))
    return cases


def run_case(case: Case, workdir: Path) -> Outcome:
    from scope.analyzers.diagnose import diagnose

    folder = workdir / re.sub(r"[^\w.-]", "_", case.name)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.log").write_text(case.log, encoding="utf-8")
    t0 = time.perf_counter()
    report = diagnose(folder, workers=1)
    seconds = time.perf_counter() - t0
    failures = [f for f in report.findings if f.kind in FAILURE_KINDS and f.severity != "info"]
    if not failures:
        return Outcome(case, "healthy", [], seconds)
    top = failures[0]
    metrics = top.metrics if isinstance(top.metrics, dict) else {}
    origin = str(metrics.get("signature") or metrics.get("code") or "")
    return Outcome(
        case, top.kind, list(top.ranks), seconds, top.summary, metrics.get("confidence"), top.suggestion or "", origin
    )


def remedy_verdict(o: Outcome) -> Fit:
    """The printed remedy against the case's REMEDY header (benchmarks/remedy_fit.py); a failing case given no
    failure finding misses."""
    fit = judge(o.case.remedy, o.printed, o.case.log)
    if o.got == "healthy" and fit.verdict != "unscored":
        return Fit("miss", [], fit.named + fit.missing)
    return fit


def run_cases(cases: list[Case]) -> Scores:
    scores = Scores()
    with tempfile.TemporaryDirectory(prefix="scope-corpus-") as tmp:
        for case in cases:
            scores.outcomes.append(run_case(case, Path(tmp)))
    return scores


# ---- does the suggestion name the remedy's action? ---------------------------------------------------
# Components and actions a REMEDY line names, each with the words a suggestion may use for it. Environment
# variables, command-line flags and called functions are taken from the REMEDY line itself.
ACTION_SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("acs", "acsctl"),
    ("iommu", "vt-d", "intel_iommu", "iommu=pt"),
    ("fabricmanager", "fabric manager"),
    ("/dev/shm", "shm-size", "ipc=host", "shm_size"),
    ("peermem", "dma-buf", "dmabuf"),
    ("sidecar", "istio", "envoy"),
    ("security group",),
    ("ulimit", "memlock"),
    ("xorg", "display server"),
    ("custom all-reduce", "custom_all_reduce", "custom allreduce", "custom-all-reduce"),
    ("set_device", "device_id", "own gpu", "own local-rank gpu", "one gpu per rank"),
    ("timeout",),
    ("drain", "exclude", "rma", "replace the gpu", "repair"),
    ("/etc/hosts", "dns", "resolvable"),
    ("nvlink bridge",),
    ("driver",),
    ("batch",),
    ("ib_umad",),
    ("efa", "fi_info"),
    ("enforce_eager", "cuda graph"),
    ("same collectives", "same collective", "same order", "rank-dependent", "every rank"),
    ("upgrade nccl", "nccl >=", "nccl version", "upgrade to nccl", "newer nccl", "nccl release", "one nccl version"),
    ("upgrade pytorch", "pytorch >=", "pytorch build", "torch build"),
    ("free port", "master_port", "another port"),
    ("logits", "host memory", "ram"),
)
_ENV = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b")
_FLAG = re.compile(r"(?<![\w-])--[a-z][\w-]+")
_CALL = re.compile(r"\b([a-z_]\w*)\(")
_NOT_SCORED = re.compile(r"(?i)^(?:none needed|n/a|not given)")


def _normal(text: str) -> str:
    return text.lower().replace("-", "_")


def remedy_actions(remedy: str) -> list[tuple[str, ...]]:
    """The actions a REMEDY line names: its env vars, flags, called functions, and components it mentions."""
    if not remedy or _NOT_SCORED.match(remedy.strip()):
        return []
    low = remedy.lower()
    groups: list[tuple[str, ...]] = [(v,) for v in dict.fromkeys(_ENV.findall(remedy))]
    groups += [(f,) for f in dict.fromkeys(_FLAG.findall(remedy))]
    groups += [(c,) for c in dict.fromkeys(_CALL.findall(remedy)) if len(c) > 3]
    groups += [g for g in ACTION_SYNONYMS if any(w in low for w in g)]
    return groups
