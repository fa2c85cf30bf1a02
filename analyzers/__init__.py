"""One module per question; each returns findings plus its tables, never plots or prints.

The registry: every analyzer `scope analyze` runs, in order, as the record it declares about itself
(scope.analyzer_spec.AnalyzerSpec: name, analyze function, options, tables, finding kinds, link rules, ...).
Adding an analyzer is its record (analyzers/<name>_spec.py, beside its code) and one line here; the CLI
flags, option checks, link rules and the list of kinds follow from the records.
"""

from __future__ import annotations

from scope.analyzers import (
    breakdown_spec,
    collectives_spec,
    comm_bound_spec,
    comm_streams_spec,
    contention_spec,
    critical_path_spec,
    diagnose_spec,
    goodput_spec,
    hta_compat_spec,
    memory_spec,
    mfu_spec,
    ops_spec,
    pipeline_spec,
    stall_spec,
    stragglers_spec,
    whatif_spec,
)
from scope.analyzers.budget import spec as budget_spec

from scope.analyzer_spec import AnalyzerSpec
from scope.causality import Rule
from scope.options import Option

# In run order; link rules apply in this order too (a rule that needs another's links comes after it).
ANALYZERS: tuple[AnalyzerSpec, ...] = (
    diagnose_spec.ANALYZER,
    stall_spec.ANALYZER,
    breakdown_spec.ANALYZER,
    budget_spec.ANALYZER,
    comm_streams_spec.ANALYZER,
    collectives_spec.ANALYZER,
    stragglers_spec.ANALYZER,
    comm_bound_spec.ANALYZER,
    pipeline_spec.ANALYZER,
    contention_spec.ANALYZER,
    mfu_spec.ANALYZER,
    memory_spec.ANALYZER,
    ops_spec.ANALYZER,
    hta_compat_spec.ANALYZER,
    whatif_spec.ANALYZER,
    critical_path_spec.ANALYZER,
    goodput_spec.ANALYZER,
)


def analyzer(name: str) -> AnalyzerSpec:
    return next(a for a in ANALYZERS if a.name == name)


def all_options() -> list[Option]:
    """Every analyzer's options, in registry order."""
    return [option for a in ANALYZERS for option in a.options]


def link_rules() -> list[Rule]:
    """Every analyzer's link rules, in the order they apply."""
    return [rule for a in ANALYZERS for rule in a.link_rules]


def finding_kinds() -> frozenset[str]:
    """Every finding kind an analyzer declares."""
    return frozenset(kind for a in ANALYZERS for kind in a.kinds)
