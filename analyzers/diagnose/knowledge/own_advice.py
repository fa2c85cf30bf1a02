"""Error messages that name their own fix, as data: the wordings an instruction takes in the messages of NCCL,
PyTorch, TransformerEngine and Ray, each with the messages it was read from. The diagnosis quotes the instruction
of the root cause's own lines ahead of its checklist (post_mortem.py, words/endings.lead_with_own_advice).

Sources, per wording (the message texts, as the programs print them):
- 'try setting / try selecting': NCCL graph/topo.cc 'Try setting NCCL_NET_MERGE_LEVEL=LOC', transport/net_ib.cc
  'Try selecting NICs of only one link type using NCCL_IB_HCA' (knowledge/nccl_warns.py); PyTorch
  c10/cuda/CUDACachingAllocator.cpp 'If reserved but unallocated memory is large try setting
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation' (older releases: 'try setting
  max_split_size_mb', corpus Instruction-Tuning-with-GPT-4-GPT-4-LLM_16).
- 'please <verb>': NCCL 'Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> ...', 'Please specify a valid
  NCCL_NET_FORCE_MERGE string', 'Please enable it or disable device merging in NCCL'; NCCL 2.4's init.cc
  'Mismatched collective detected, please check your collective calls at and around rank N' (corpus
  NVIDIA-nccl_296).
- 'you can <verb>': NCCL graph/paths.cc 'If you still want to proceed, you can set NCCL_IGNORE_DISABLED_P2P=1';
  PyTorch torch/csrc/distributed/c10d/reducer.cpp 'You can enable unused parameter detection by passing the
  keyword argument `find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`'; NCCL 2.4 'You
  can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs' (corpus NVIDIA-nccl_296).
- 'Set / export X=Y': NCCL mnnvl.cc 'Set NCCL_MNNVL_ENABLE=0 to ignore this issue'.
- 'Launch app with X=Y': TransformerEngine transformer_engine/pytorch/module/base.py initialize_ub 'Launch app
  with UB_SKIPMC=1 to try CUDA IPC instead'.
- 'consider <verb>ing': Ray's memory monitor 'Consider provisioning more memory on this node or reducing task
  parallelism by requesting more CPUs per task' (corpus vllm-project-vllm_1160).
- 'To fix / adjust / disable ...,': Ray's memory monitor 'To adjust the kill threshold, set the environment
  variable `RAY_memory_usage_threshold` when starting Ray'.

Not advice (NOT_ADVICE): wordings of the same shape that are no fix of the failure - NCCL's 'internal error -
please report this issue to the NCCL developers', PyTorch's CUDA-error boilerplate 'For debugging consider passing
CUDA_LAUNCH_BLOCKING=1' and 'Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions' (printed with
every CUDA error: a debugging aid), torchrun's OMP_NUM_THREADS note ('please further tune the variable'); a
warning's own instructions, which are no fix of the failure beside it - tokenizers' 'To disable this warning, you
can either: ... TOKENIZERS_PARALLELISM=(true | false)', torch.distributed.launch's 'please use torchrun instead of
torch.distributed.launch', a FutureWarning's 'is deprecated. Please use `torch.amp.autocast('cuda', ...)`
instead' (the warning's word stands before the instruction: NOT_ADVICE_BEFORE), and a debugging aid's 'You can
set NCCL_DEBUG=INFO for more details'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class AdviceForm:
    name: str
    pattern: re.Pattern[str]  # its match is the instruction, quoted as it is
    source: str


# An instruction runs to the end of its sentence: a '.' followed by a space or the line's end (not the '.' in
# 'torch.nn.parallel', 'expandable_segments:True.').
_TO_SENTENCE_END = r"(?:[^.]|\.(?=\S))*+"  # possessive: nothing after it, and one reading of a long line
_VAR = r"`?[A-Z][A-Z0-9_]{3,}`?=\S+"

ADVICE_FORMS: tuple[AdviceForm, ...] = (
    AdviceForm(
        "try <verb>ing",
        re.compile(
            r"\b[Tt]ry (?:setting|selecting|using|increasing|reducing|passing|disabling|enabling)\b" + _TO_SENTENCE_END
        ),
        "NCCL graph/topo.cc, transport/net_ib.cc; PyTorch c10/cuda/CUDACachingAllocator.cpp",
    ),
    AdviceForm(
        "please <verb>",
        re.compile(
            r"\b[Pp]lease (?:set|use|specify|enable|disable|check|increase|install|make sure|pass|export)\b"
            + _TO_SENTENCE_END
        ),
        "NCCL bootstrap / topology WARNs; NCCL 2.4 init.cc 'Mismatched collective detected'",
    ),
    AdviceForm(
        "you can <verb>",
        re.compile(r"\b[Yy]ou can (?:set|use|enable|disable|pass|increase|export)\b" + _TO_SENTENCE_END),
        "NCCL graph/paths.cc; PyTorch torch/csrc/distributed/c10d/reducer.cpp",
    ),
    AdviceForm(
        "set / export X=Y",
        re.compile(r"\b(?:[Ss]et|[Ee]xport) " + _VAR + _TO_SENTENCE_END),
        "NCCL mnnvl.cc 'Set NCCL_MNNVL_ENABLE=0 to ignore this issue'",
    ),
    AdviceForm(
        "launch with X=Y",
        re.compile(r"\b[Ll]aunch (?:the )?(?:app|application|job|it) with " + _VAR + _TO_SENTENCE_END),
        "TransformerEngine pytorch/module/base.py initialize_ub",
    ),
    AdviceForm(
        "consider <verb>ing",
        re.compile(
            r"\b[Cc]onsider (?:increasing|setting|using|passing|provisioning|reducing|raising|lowering)\b"
            + _TO_SENTENCE_END
        ),
        "Ray memory monitor",
    ),
    AdviceForm(
        "to fix / adjust / disable ...,",
        re.compile(r"\bTo (?:fix|resolve|adjust|disable) (?:this|the [\w -]{1,30}|[\w -]{1,30}), " + _TO_SENTENCE_END),
        "Ray memory monitor",
    ),
)

# Wordings of the same shape that are no fix of the failure (the module's docstring gives each one's source).
NOT_ADVICE = re.compile(
    r"report this issue|CUDA_LAUNCH_BLOCKING|TORCH_USE_CUDA_DSA|further tune the variable|"
    r"To avoid this inconsistency, we are taking|this warning|deprecat|\binstead of\b|FutureWarning|"
    r"for more details"
)
# A deprecation warning's words just before an instruction on its line: the instruction is the warning's
NOT_ADVICE_BEFORE = re.compile(r"FutureWarning|DeprecationWarning|deprecated")
_BEFORE_CHARS = 160

# The longest quote: an instruction is a sentence, not a paragraph.
_MAX_QUOTE = 240


def own_advice(text: str) -> str | None:
    """The instructions the message gives for its own fix (two at most, in their order), as it says them, with
    the condition it puts them under ('If reserved ... is large try setting ...'), or None."""
    found: dict[int, str] = {}
    for form in ADVICE_FORMS:
        for m in form.pattern.finditer(text):
            start = _condition_start(text, m.start())
            quote = text[start : m.end()].strip(" ,;:")
            before = text[max(text.rfind("\n", 0, start) + 1, start - _BEFORE_CHARS) : start]
            if not NOT_ADVICE.search(quote) and not NOT_ADVICE_BEFORE.search(before) and len(quote) > 12:
                found.setdefault(start, quote)
    quotes = [q for _, q in sorted(found.items())]
    quotes = [q for i, q in enumerate(quotes) if not any(q in other for other in quotes[:i])][:2]
    if not quotes:
        return None
    quote = " ... ".join(quotes)
    return quote if len(quote) <= _MAX_QUOTE else quote[: _MAX_QUOTE - 3].rstrip() + "..."


_SENTENCE_START = re.compile(r"(?:^|[.)]\s+|,\s+)(?=If\b)")


def _condition_start(text: str, at: int) -> int:
    """Where the sentence of an instruction at `at` starts when it opens with 'If' (its condition), else `at`."""
    starts = [m.end() for m in _SENTENCE_START.finditer(text, max(0, at - 120), at)]
    return starts[-1] if starts and "." not in text[starts[-1] : at] else at
