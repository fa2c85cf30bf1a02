"""What a process was doing when it raised, from the frames of a traceback cut before its exception line.

reasoning/traceback_end.py finds the cut traceback; this module reads its frames against knowledge/cut_frames.py:
the innermost frame a row knows names the activity (creating a directory, an asynchronous write, fetching a batch),
the nearest frame that puts the process in a stage of knowledge/stages.py names the stage (a checkpoint save, an
evaluation; the training steps only where no other stage shows, since data loading and the forward pass run in
evaluation too), and the innermost frame outside the interpreter's own modules is the program's call that led there,
quoted with its source line. The finding's kind and checks are the activity's; the exception line is still asked
for, since only it names the error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.cut_frames import STDLIB_FRAME, FrameMark, mark_of
from scope.analyzers.diagnose.knowledge.stages import STAGE_INFO
from scope.analyzers.diagnose.model import APPLICATION, STALL, Anomaly
from scope.analyzers.diagnose.readers.cut_traceback import REMEDY as COLLECTIVE_REMEDY

# a frame line: 'File "<path>", line N, in <func>' under any prefix
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[\w<>.]+)\s*$')
_PATH_PARTS = 4  # the path's last parts quoted ('metaseq/file_io/common/non_blocking_io.py')
ASK_FOR_LINE = (
    "The exception line itself is cut away: read it in the whole log (the rank's own stderr, the launcher's output, "
    "the job's log file) to confirm, or rerun to see it."
)


@dataclass(frozen=True)
class Frame:
    file: str
    func: str
    line: int
    source: str  # the source line printed under the frame ('' none)

    def named(self) -> str:
        return f"{self.func} in {_short(self.file)}"

    def quoted(self) -> str:
        """Its name with its line and the source printed under it."""
        return f"{self.named()}, line {self.line}" + (f": `{self.source[:120]}`" if self.source else "")


@dataclass(frozen=True)
class Doing:
    mark: FrameMark
    frame: Frame
    stage: str  # knowledge/stages.STAGES name ('' none shown)
    stage_frame: Frame | None
    program: Frame | None  # the innermost frame of the program's own code (outside the interpreter's modules)


def frames_of(lines: list[str]) -> list[Frame]:
    """The traceback's frames, outermost first, each with the source line under it."""
    out: list[Frame] = []
    for i, ln in enumerate(lines):
        m = _FRAME.search(ln)
        if m is None:
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        nxt = nxt[m.start() :] if len(nxt) > m.start() else nxt  # under the frame's own prefix ('[rank8]:   ')
        source = "" if _FRAME.search(nxt) else nxt.strip()
        out.append(Frame(m.group("file"), m.group("func"), int(m.group("line")), source))
    return out


def doing(frames: list[Frame]) -> Doing | None:
    """The activity of the innermost frame a row knows, with its stage and the program's call; None when no frame
    is known."""
    known = [(f, mark) for f in reversed(frames) if (mark := mark_of(f.file, f.func, f.source)) is not None]
    if not known:
        return None
    frame, mark = known[0]
    stages = [m.stage for _, m in known if m.stage]
    stage = next((s for s in stages if s != "steps"), stages[0] if stages else "")
    # the stage's outermost frame: the call that entered it (save_checkpoint, evaluate), not a helper inside it
    stage_frame = next((f for f, m in reversed(known) if m.stage == stage), None) if stage else None
    program = next((f for f in reversed(frames) if not STDLIB_FRAME.search(f.file)), None)
    return Doing(mark, frame, stage, stage_frame, program)


def cut_while(d: Doing, display: str, line: int, count: str) -> Anomaly:
    """The finding of a traceback cut while the process was doing D."""
    during = ""
    if d.stage_frame is not None and d.stage_frame is not d.frame:
        if d.stage != d.mark.stage:
            during = f" during {STAGE_INFO[d.stage].words} ({d.stage_frame.named()})"
        elif d.stage != "steps":  # a save's entry point, not the module machinery around a forward
            during = f", called from {d.stage_frame.named()}"
    where = f"while it was {d.mark.what} ({d.frame.named()}){during}"
    said = f"while it was {d.mark.what} ({d.frame.quoted()}){during}"
    timeout = d.mark.kind == "timeout"
    checks = COLLECTIVE_REMEDY if timeout else d.mark.checks[:1].upper() + d.mark.checks[1:] + "."
    return Anomaly(
        code=f"traceback_cut_in_{d.mark.activity}",
        kind=d.mark.kind,
        level=STALL if timeout else APPLICATION,
        message=(
            f"The log ends inside a Python traceback ({count}) cut before its exception line, {where}: a process "
            "raised there, and the error that names why is not in the log"
        ),
        file=display,
        line=line,
        severity="critical",
        details={
            "confidence": "low",
            "remedy": f"The process raised {said}{_called(d.program, d.frame)}. {checks} {ASK_FOR_LINE}",
            "frame": d.frame.named(),
            "activity": d.mark.activity,
            **({"stage": d.stage} if d.stage else {}),
        },
    )


def _called(program: Frame | None, frame: Frame) -> str:
    """'; the program's own call was f (path:line): `source`' ('' where every frame is the interpreter's, or where
    that call is the activity's own frame, quoted already)."""
    if program is None or program is frame:
        return ""
    said = f": `{program.source[:120]}`" if program.source else ""
    return f"; the program's own call was {program.func} ({_short(program.file)}:{program.line}){said}"


def _short(path: str) -> str:
    """A library's path from its package ('transformers/trainer.py'), any other's last parts."""
    path = path.replace("\\", "/")
    for packages in ("/site-packages/", "/dist-packages/"):
        if packages in path:
            return path.rsplit(packages, 1)[1]
    return "/".join(path.split("/")[-_PATH_PARTS:])
