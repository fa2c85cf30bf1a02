"""Does the printed remedy fit the fix a case's thread confirmed? Scored from the case's REMEDY header alone.

The key tokens of a REMEDY line are what someone applies: environment variables (NCCL_IB_HCA), flags
(--shm-size, `ulimit -l`), settings and limits (timeout, /dev/shm, memlock), a package with a version
(NCCL 2.29), file paths and files (/etc/nccl.conf, run.sh), identifiers (find_unused_parameters, mlx5_3) and
commands (show_gids, setpci). A REMEDY often offers alternatives ("A, or B; workaround: C"): the remedy
fits when it names every token of one alternative, fits partly when it names some token, and misses when it
names none. A REMEDY with no key token is not scored. Matching ignores case and '-' vs '_', and a token is
also met by a word of its synonym group (--ipc=host for /dev/shm).

Checked against hand judgements of held-out threads (kept outside the repository) and the corpus rows of
benchmarks/remedy_expectations.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Words that stand for one action: a REMEDY naming any of a group is met by a suggestion naming any of it.
SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("/dev/shm", "--shm-size", "shm-size", "--ipc=host", "ipc=host", "--ipc", "shared memory", "shm_size"),
    ("ulimit -l", "memlock", "locked-memory limit", "locked memory"),
    ("timeout", "ddp_timeout", "--ddp_timeout", "timeout="),
    ("acs", "acsctl", "setpci"),
    ("iommu", "vt-d", "intel_iommu", "iommu=pt"),
    ("fabricmanager", "fabric manager", "nvidia-fabricmanager"),
    ("exclude the node", "drain", "--exclude", "rma", "replace the gpu", "repaired", "repair"),
    ("nvidia-smi -r", "reset the gpu", "gpu reset", "--gpu-reset", "needs a reset", "reset it"),
    # not bare "ram" ('a RAM-hungry loader' describes the problem) nor "full volume" (a cause the corrupt-checkpoint
    # remedy names, not freeing space)
    ("host ram", "host memory", "more ram", "host's memory", "cpu memory", "host's ram", "node's ram"),
    ("disk space", "free space", "free disk", "volume with room"),
    ("checkpoint interval", "save interval", "save_interval", "--save-interval", "save_checkpoint_freq", "less often"),
    ("num_workers", "dataloader workers", "data-loader workers", "fewer workers"),
    ("--nproc_per_node", "nproc_per_node", "--nproc-per-node", "--num_processes", "one process per gpu"),
    ("own device", "own gpu", "one gpu per rank", "set_device", "own local-rank gpu"),
    ("--master_port", "master_port", "free port", "another port"),
    ("pinned environment", "pinned versions", "same torch build", "same torch", "torch build"),
    ("universal checkpoint", "ds_to_universal", "ds_to_universal.py"),
    ("dp world size", "dp size", "data-parallel size", "dp world"),
    ("mpi", "ucx", "mpirun"),
    ("driver", "nvidia driver", "gpu driver"),
    ("rdma", "gpudirect", "net/ib", "infiniband"),
    ("cxi hook", "libfabric", "aws-ofi-nccl", "ofi"),
    ("every rank", "all ranks", "each rank"),
    ("custom all-reduce", "custom_all_reduce", "custom allreduce", "--disable-custom-all-reduce"),
    ("batch size", "micro-batch size", "micro_batch", "smaller batch"),  # not "batch": 'a batch of another shape'
    ("xorg", "display server"),
    ("sidecar", "istio", "envoy"),
)

# Extra regexes meeting a synonym group's token (word order the fixed words cannot cover).
GROUP_PATTERNS: dict[str, str] = {
    "exclude the node": r"exclude (?:\w+ ){0,2}nodes?\b|leave (?:it|that node|the node) out",
}

# Environment variables of public software (NCCL, torch, CUDA, launchers...): a REMEDY naming another is the
# poster's own script's variable, which a diagnosis can only quote where the log names it.
PUBLIC_ENV = re.compile(
    r"^(?:NCCL|TORCH|PYTORCH|CUDA|MASTER|GLOO|UCX|FI|PL|OMP|HF|NVIDIA|LD|WORLD|LOCAL|RANK|TORCHELASTIC|DS|"
    r"ACCELERATE|XLA|XRT|TPU|HIP|ROCR|RCCL|MIOPEN|SLURM|OMPI|PMIX|MPI|NVSHMEM|TRANSFORMERS|TOKENIZERS)_"
)

# Settings and components a REMEDY names in plain words: (pattern on the lower-cased REMEDY, the token it is).
SETTINGS: tuple[tuple[str, str], ...] = (
    (r"timeout", "timeout"),
    (r"/dev/shm|shared.memory limit", "/dev/shm"),
    (r"memlock", "memlock"),
    (r"\bacs\b", "acs"),
    (r"iommu", "iommu"),
    (r"fabric ?manager", "fabricmanager"),
    (
        r"(?:exclude|remove) (?:the |that |this )?(?:faulty |broken )?nodes?\b|\bdrain\b|healthy nodes|faulty node",
        "exclude the node",
    ),
    (r"custom.?all.?reduce", "custom all-reduce"),
    (r"\bbatch size\b|\bsmaller batch\b", "batch size"),
    (r"master port", "--master_port"),
    (r"security group", "security group"),
    (r"\bxorg\b", "xorg"),
    (r"nvlink bridge", "nvlink bridge"),
    (r"\bistio\b|\bsidecar\b|\benvoy\b", "sidecar"),
    (r"\brma\b", "rma"),
    (r"reset the (?:faulty )?gpu", "nvidia-smi -r"),
    (r"host ram|host.memory|more ram|cpu memory", "host ram"),
    (r"disk space|free space", "disk space"),
    (r"checkpoint interval|save interval", "checkpoint interval"),
    (r"num_workers|dataloader workers", "num_workers"),
    (r"one process per gpu", "--nproc_per_node"),
    (r"own device|own gpu", "own device"),
    (r"universal checkpoint", "universal checkpoint"),
    (r"same dp world size|dp world size", "dp world size"),
    (r"\bmpi\b", "mpi"),
    (r"\bdriver\b", "driver"),
    (r"\brdma\b", "rdma"),
    (r"cxi hook", "cxi hook"),
    (r"pinned environment", "pinned environment"),
    (r"\ball ranks\b|\bevery rank\b", "every rank"),
)

# Commands a REMEDY may name (the tool the fix is checked or applied with).
COMMANDS: tuple[str, ...] = (
    "show_gids",
    "ibstat",
    "ibv_devinfo",
    "setpci",
    "nslookup",
    "getent",
    "chmod",
    "dmesg",
    "nvidia-smi",
    "py-spy",
    "sbatch",
    "docker run",
    "systemctl",
)

# Packages whose version a REMEDY may name ("NCCL 2.29", "torch 2.2", "driver 535").
PACKAGES = r"nccl|torch|pytorch|cuda|driver|deepspeed|accelerate|mmseg|transformers|megatron"
_PACKAGE_VERSION = re.compile(rf"(?i)\b({PACKAGES})\s*(?:>=|==|v)?\s*(\d+(?:\.\d+)+)\b")
# 'upgrade NCCL', 'install the same NCCL version', 'rebuild ... against a current NCCL': a package's version asked for
_PACKAGE_CHANGE = re.compile(
    rf"(?i)\b(?:upgrade|downgrade|install|rebuild\S*|same)\b[^;,.()]{{0,40}}?\b({PACKAGES}|aws-ofi-nccl)\b(?!\s*\d)"
)
_VERSION_WORDS = ("version", "upgrade", "downgrade", "newer", "older", "release", "build")
# NCCL_IB_HCA; OMPI_MCA_btl_tcp_if_include (an MCA parameter's name is lower case after its prefix)
_ENV = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}(?:_[a-z0-9]+)*\b")
_LONG_FLAG = re.compile(r"(?<![\w-])--[a-zA-Z][\w-]*(?:=host)?")
_SHORT_FLAG = re.compile(r"\b(ulimit|nvidia-smi|mpirun|docker|sbatch)\s+(-[a-zA-Z])\b")
_PATH = re.compile(r"(?<![\w.<])(?:/[\w.-]+)+")
_FILE = re.compile(r"\b[\w-]+\.(?:py|sh|conf|ya?ml|json|cfg|ini)\b")
_PIN = re.compile(r"\b[\w-]+==[\w.]+")
_DOTTED = re.compile(r"\b[a-z]\w*(?:\.[A-Za-z_]\w*){2,}")
_IDENT = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
# An alternative starts at ';', ' or ', '/ ' between actions, '(or ' and 'workaround:' (the REMEDY's own words).
_ALTERNATIVE = re.compile(
    r"(?i);|\(or\b|\(later:|\bor\b|\b(?:as a )?workaround:?|\bearlier stop-gaps:|\bstop-gap:|\s/\s"
)
# Quoted confirmations and PR references are the thread's words, not the fix.
_NOT_FIX = re.compile(
    r'"[^"]*"|<[^>]*>|\(plus [^)]*\)|\binstead of [^;,)]*|\bkeep [A-Z_]+=\S+|\bPR #?\d+|#\d+|'
    r"\bposter confirmed.*$|\bproblem gone.*$",
    re.I,
)
_NOT_SCORED = re.compile(r"(?i)^\s*(?:none|n/a|not given|-)?\s*$|^\s*none\b")


@dataclass(frozen=True)
class Token:
    """One key token of a REMEDY and the words that meet it in a printed remedy."""

    text: str
    accepts: tuple[str, ...]
    command: bool = False  # a tool to check or apply with: required only where the alternative names nothing else
    local: bool = False  # the poster's own file, path or variable: expected only where the log names it
    pattern: str = ""  # a regex that also meets it (a package near its version or a version word)

    def met_by(self, printed: str) -> bool:
        if self.pattern and re.search(self.pattern, printed, re.I):
            return True
        return any(_contains(printed, word) for word in self.accepts)


@dataclass
class Fit:
    verdict: str  # "fit", "partly", "miss" or "unscored"
    named: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _normal(text: str) -> str:
    return text.lower().replace("-", "_")


def _contains(printed: str, word: str) -> bool:
    """Whether `word` stands in `printed` as a whole word (case and '-' vs '_' ignored). '-' and '_' inside a name
    join it on both edges ('NCCL_IB_HCA' and 'NCCL-IB-HCA' hold no ib_hca, '--master-port' no port, 'port_range'
    no port); a flag's leading dashes ('--rdzv_endpoint', ' -x') start a word (read on the printed text before
    '-' became '_')."""
    w = _normal(word)
    right = r"(?![a-z0-9]|_[a-z0-9])" if w[-1:].isalnum() else ""
    low = printed.lower()
    for m in re.finditer(re.escape(w) + right, _normal(printed)):
        if not w[:1].isalnum() or not _joined_before(low, m.start()):
            return True
    return False


def _joined_before(low: str, at: int) -> bool:
    """Whether the name at `at` continues one before it: a letter, digit or '_' just before, or a '-' that follows
    one (a dash inside a name, not a flag's leading dashes)."""
    if at == 0:
        return False
    before = low[at - 1]
    if before == "-":
        return at >= 2 and low[at - 2].isalnum()
    return bool(re.match(r"[a-z0-9_]", before))


def _accepts(word: str) -> tuple[str, ...]:
    groups = [g for g in SYNONYMS if any(_normal(word) == _normal(s) for s in g)]
    words = [word, *(s for g in groups for s in g)]
    if word.startswith("--") and len(word) > 5:  # a flag is also met by its bare name ('GPUs' for --gpus)
        words.append(word[2:].replace("-", " ").replace("_", " "))
    if re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", word):  # world_size: 'world size'
        words.append(word.replace("_", " "))
    return tuple(dict.fromkeys(words))


def _token(word: str, **kind: bool) -> Token:
    pattern = GROUP_PATTERNS.get(word, "")
    if re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+){2,}", word):  # micro_batch_size in train_micro_batch_size_per_gpu
        pattern = re.escape(word)
    return Token(word, _accepts(word), pattern=pattern, **kind)


def _version_token(pkg: str, version: str) -> Token:
    """A package at a version: met by the package near that version, or near a version word."""
    name = f"{pkg} {version or 'version'}"
    pkg = "(?:py)?torch" if pkg.lower() in ("torch", "pytorch") else re.escape(pkg)  # one package, two names
    ver = re.escape(version) if version else "(?!)"
    words = "|".join(_VERSION_WORDS)
    pattern = (
        rf"\b{pkg}\b[^;.]{{0,30}}?{ver}|\b{pkg}\b\W{{0,3}}(?:\w+\W{{1,3}}){{0,2}}(?:{words})|"
        rf"(?:{words}|install|matching)\W+(?:\w+\W+){{0,3}}{pkg}\b"
    )
    return Token(name, (name,), pattern=pattern)


def key_tokens(remedy: str) -> list[Token]:
    """The key tokens of one REMEDY text (or of one alternative of it), in the order they appear."""
    text = _NOT_FIX.sub(" ", remedy)
    found: list[tuple[int, Token]] = []
    for m in _PACKAGE_VERSION.finditer(text):
        found.append((m.start(), _version_token(m.group(1), m.group(2))))
    for m in _PACKAGE_CHANGE.finditer(text):
        found.append((m.start(1), _version_token(m.group(1), "")))
    for m in _DOTTED.finditer(text):
        parts = m.group(0).split(".")
        accepts = (m.group(0), ".".join(parts[-2:]), *([parts[-1]] if len(parts[-1]) >= 8 else []))
        found.append((m.start(), Token(m.group(0), accepts)))
    found += [(m.start(), _token(m.group(0))) for m in _PIN.finditer(text)]
    found += [(m.start(), _token(m.group(0), local=not PUBLIC_ENV.match(m.group(0)))) for m in _ENV.finditer(text)]
    found += [(m.start(), _token(m.group(0))) for m in _LONG_FLAG.finditer(text)]
    for rx in (_PATH, _FILE):
        found += [(m.start(), _token(m.group(0), local=m.group(0) != "/dev/shm")) for m in rx.finditer(text)]
    found += [(m.start(), _token(f"{m.group(1)} {m.group(2)}")) for m in _SHORT_FLAG.finditer(text)]
    found += [(m.start(), _token(m.group(0))) for m in _IDENT.finditer(text)]
    low = text.lower()
    for pattern, word in SETTINGS:
        m = re.search(pattern, low)
        if m:
            found.append((m.start(), _token(word)))
    for word in COMMANDS:
        at = _find_word(low, word)
        if at >= 0:
            found.append((at, _token(word, command=True)))
    return _dedupe(found)


def _find_word(low: str, word: str) -> int:
    m = re.search(r"(?<![\w/-])" + re.escape(word) + r"(?![\w])", low)
    return m.start() if m else -1


def _dedupe(found: list[tuple[int, Token]]) -> list[Token]:
    """One token per action: a token that is a whole word of another (NCCL_IB_HCA in NCCL_IB_HCA=^mlx5_3), or of
    the same synonym group as an earlier one (--shm-size after /dev/shm), is dropped. A word inside a longer name
    (timeout in TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, mpi in OMPI_MCA_...) is its own token."""
    out: list[Token] = []
    for _, tok in sorted(found, key=lambda p: p[0]):
        if any(_normal(tok.text) in map(_normal, t.accepts) for t in out):
            continue
        if any(_word_of(tok.text, t.text) or _word_of(t.text, tok.text) for t in out):
            continue
        out.append(tok)
    return out


def _word_of(small: str, big: str) -> bool:
    """Whether SMALL is a whole word of BIG, '_' binding (TIMEOUT is no word of HEARTBEAT_TIMEOUT_SEC) and '-'
    or '=' separating (local_addr is a word of --local_addr, NCCL_IB_HCA of NCCL_IB_HCA=^mlx5_3)."""
    return re.search(r"(?<![a-z0-9_])" + re.escape(small.lower()) + r"(?![a-z0-9_])", big.lower()) is not None


def _expected(tokens: list[Token], log: str | None) -> list[Token]:
    """The tokens a diagnosis can be asked to name: the poster's own files and variables only where the log
    names them (log None: all)."""
    if log is None:
        return tokens
    return [t for t in tokens if not t.local or _contains(log, t.text)]


def alternatives(remedy: str, log: str | None = None) -> list[list[Token]]:
    """The REMEDY's alternatives, each with its key tokens (an alternative with none is left out)."""
    text = _NOT_FIX.sub(" ", remedy)
    split = [_expected(key_tokens(p), log) for p in _ALTERNATIVE.split(text)]
    parts = [[t for t in p if not t.command] or p for p in split]
    parts = [p for p in parts if p]
    acting = [p for p in parts if not all(t.command for t in p)]
    return acting or parts  # checking with a tool is the fix only where the REMEDY names no action


# A span the printed text quotes: in single quotes ('Timeout(ms)=1200000', never an apostrophe: "rank's"), then in
# parentheses, one level nested ('(RuntimeError: ...)' after a summary's meaning).
_SINGLE_QUOTED = re.compile(r"(?<![\w'])'([^'\n]{4,}?)'(?![\w])")
_BRACKETED = re.compile(r"\(((?:[^()\n]|\([^()\n]*\))+)\)")


def without_log_quotes(printed: str, log: str) -> str:
    """PRINTED without the spans it quotes from LOG verbatim (a long quote is cut at its end, so its first 60
    characters decide): the log's own words ('Timeout(ms)=...') are evidence, not the fix, so a REMEDY's word met
    only inside them does not count. A single token the remedy names in its own sentence in parentheses
    ('(./run.sh)' after 'the launch command') stays."""

    def quoted(m: re.Match[str]) -> str:
        return " " if m.group(1).strip()[:60] in log else m.group(0)

    def bracketed(m: re.Match[str]) -> str:
        span = m.group(1).strip()
        return " " if len(span.split()) > 1 and span[:60] in log else m.group(0)

    return _BRACKETED.sub(bracketed, _SINGLE_QUOTED.sub(quoted, printed))


def judge(remedy: str, printed: str, log: str | None = None) -> Fit:
    """fit: every token of one alternative named; partly: some token named; miss: none; unscored: no token.
    With the case's log, the poster's own files and variables count only where the log names them, and what the
    printed text quotes from the log is not read (without_log_quotes)."""
    if not remedy or _NOT_SCORED.match(remedy):
        return Fit("unscored")
    if log is not None:
        printed = without_log_quotes(printed, log)
    tokens = _expected(key_tokens(remedy), log)
    if not tokens:
        return Fit("unscored")
    named = [t.text for t in tokens if t.met_by(printed)]
    missing = [t.text for t in tokens if t.text not in named]
    if any(all(t.met_by(printed) for t in alt) for alt in alternatives(remedy, log)):
        return Fit("fit", named, missing)
    return Fit("partly" if named else "miss", named, missing)
