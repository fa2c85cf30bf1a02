"""Compare: this run (A) against another (B, `scope dashboard A --compare B`): the step budget's change
as a waterfall, per-rank changes as a heat-map (cells link to A's timeline), the ops, kernels and
collectives that changed, and the findings that appeared or disappeared. The comparison is
scope.compare, the same as `scope compare A B`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from dash import Dash, dcc, html
from scope.app.data import RunData
from scope.app.figures_compare import rank_change_figure, waterfall_figure
from scope.app.links import href
from scope.app.pages.common import empty_state, facts, frame_table, graph

from scope.compare.result import ComparisonResult
from scope.errors import ScopeError
from scope.render.compare import verdict_text

PATH = "/compare"
TITLE = "Compare"
ROWS = 25


def comparison(data: RunData) -> ComparisonResult | None:
    """The comparison with run B, computed once per snapshot of A (B is analyzed on first view if needed);
    B and what the page last showed of it are this app's (RunData), never a module's."""
    other = data.compare_with
    if other is None:
        return None

    def build() -> ComparisonResult:
        from scope.compare import compare_paths

        return compare_paths(data.path, other).result()

    # B's state is part of the key: a B deleted or replaced on disk is compared again (or said gone),
    # never shown as it was
    signature = b_signature(other)
    value: ComparisonResult = data.memo(("compare", str(other), signature), build)
    before, data.compare_shown = data.compare_shown, signature
    if before is not None and before != signature:
        value = value.with_note(
            f"B ({other}) changed on disk since the last view: compared again with what it holds now"
        )
    return value


def b_signature(other: Path) -> tuple[Any, ...]:
    """What B is now: its inputs (files, bytes, newest time) and its store's saved analysis; ("gone",) when
    B is no longer there. Cheap: one walk of B's folder, as the refresh timer makes of A's."""
    from scope.inputs import input_signature, is_store, store_dir_for
    from scope.store import analysis_path

    if not other.exists():
        return ("gone",)
    store = other if is_store(other) else store_dir_for(other)
    saved = analysis_path(store)
    made = saved.stat().st_mtime_ns if saved.is_file() else 0
    if is_store(other):
        return ("store", made)
    return (*input_signature(other, {store}), made)


def layout(data: RunData, params: dict[str, str]) -> html.Div:
    other = data.compare_with
    if other is None:
        return html.Div(
            [
                html.H2(TITLE),
                empty_state(
                    "No run to compare with",
                    "Start the dashboard with a second run: `scope dashboard A --compare B` (run directories, "
                    "trace folders or stores). The same comparison prints with `scope compare A B`.",
                ),
            ]
        )
    if not other.exists():
        return html.Div(
            [
                html.H2(TITLE),
                empty_state(
                    "Run B is gone",
                    f"{other} no longer exists (deleted or moved since the dashboard started): nothing to compare "
                    "with. Restart with `--compare` on a run that exists.",
                ),
            ]
        )
    try:
        c = comparison(data)
    except ScopeError as exc:
        return html.Div([html.H2(TITLE), empty_state("The runs cannot be compared", exc.message)])
    assert c is not None
    return html.Div(
        [
            html.H2(f"{TITLE}: A = this run, B = {c.b.path}"),
            *_verdict(c),
            graph("compare-waterfall", waterfall_figure(c.step)),
            *_host(c),
            html.H3("Per rank"),
            *_rank_notes(c.ranks),
            graph("compare-ranks", rank_change_figure(c.ranks, _labels(c))),
            _rank_links(c.ranks),
            _distributions(c.ranks),
            html.H3("Operations and kernels, largest change first (per step, mean over ranks)"),
            frame_table(_ops(c.ops["changed"]), max_rows=ROWS, table_id="compare-ops"),
            *_only(c.ops),
            html.H3("Collectives (matched by group, op and size)"),
            frame_table(_collectives(c.collectives["matched"]), max_rows=ROWS, table_id="compare-collectives"),
            html.H3("Findings"),
            _findings(c.findings),
        ],
        className="compare-page",
    )


def _ms(us: Any, sign: bool = False) -> str:
    if us is None:
        return "–"
    return f"{us / 1e3:+,.1f}" if sign else f"{us / 1e3:,.1f}"


def _verdict(c: ComparisonResult) -> list[Any]:
    s = c.step
    out: list[Any] = []
    if not c.comparable:
        out.append(html.P("Not comparable: " + "; ".join(c.not_comparable), className="error"))
    out.append(
        facts(
            [
                (
                    "mean step",
                    f"{_ms(s['a_mean_step_us'])} → {_ms(s['b_mean_step_us'])} ms "
                    f"({_ms(s['delta_mean_step_us'], True)} ms)",
                ),
                ("median step", f"{_ms(s['a_median_step_us'])} → {_ms(s['b_median_step_us'])} ms"),
                ("noise", f"±{_ms(s['noise_us'])} ms"),
                ("verdict", verdict_text(s)),
                ("step split from", _sources_words(s.get("sources") or [])),
            ]
        )
    )
    out += [html.P(f"note: {n}", className="muted compare-note") for n in c.notes]
    return out


# where a run's split of the step comes from (scope.compare.budget: RunBudget.source), in words
SOURCE_WORDS = {
    "budget": "the step budget (every bucket of the step)",
    "breakdown": "the breakdown (compute, communication, idle)",
    "steps": "step times only",
}


def _sources_words(sources: list[str]) -> str:
    """'the step budget (every bucket of the step), both runs', or A's and B's when they differ."""
    words = [SOURCE_WORDS.get(str(s), str(s)) for s in sources]
    if len(set(words)) == 1:
        return f"{words[0]}, both runs"
    return "; ".join(f"{run}: {w}" for run, w in zip(("A", "B"), words, strict=False))


def _host(c: ComparisonResult) -> list[Any]:
    h = c.host
    if not h or not h.get("buckets"):
        return []
    return [html.H3("On the training thread (host view)"), graph("compare-host-waterfall", waterfall_figure(h))]


def _labels(c: ComparisonResult) -> dict[str, str]:
    return {b["bucket"]: b["label"] for b in c.step["buckets"]}


def _rank_notes(ranks: dict[str, Any]) -> list[Any]:
    notes = []
    if not ranks["matched"]:
        notes.append(ranks["why_not"])
    for key, words in (("became_stragglers", "became stragglers"), ("stopped_being_stragglers", "stopped being")):
        if ranks.get(key):
            notes.append(f"ranks {', '.join(map(str, ranks[key]))} {words}")
    return [html.P(n, className="muted") for n in notes]


def _rank_links(ranks: dict[str, Any]) -> html.Div:
    """The ranks that changed most, each linked to A's timeline."""
    rows = sorted(ranks.get("rows") or [], key=lambda r: -abs(r.get("delta_us") or 0))[:8]
    if not ranks.get("matched") or not rows:
        return html.Div()
    links: list[Any] = ["Largest changes on A's timeline (B's: `scope dashboard B`): "]
    for i, r in enumerate(rows):
        if i:
            links.append(" · ")
        links.append(
            dcc.Link(f"rank {r['rank']} ({_ms(r['delta_us'], True)} ms)", href=href("timeline", rank=r["rank"]))
        )
    return html.Div(links, className="finding-links")


def _distributions(ranks: dict[str, Any]) -> html.Div:
    """Runs whose ranks cannot be matched one to one: their per-rank median steps as distributions."""
    if ranks.get("matched") or not ranks.get("rows"):
        return html.Div()
    df = pd.DataFrame(ranks["rows"])
    table = pd.DataFrame(
        {
            "ranks": df["quantile"],
            "A ms": df["a_step_us"] / 1e3,
            "B ms": df["b_step_us"] / 1e3,
            "change ms": df["delta_us"] / 1e3,
        }
    )
    return frame_table(table, table_id="compare-distributions")


def _ops(rows: list[dict[str, Any]]) -> pd.DataFrame:
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows)
    return pd.DataFrame(
        {
            "": df["family"],
            "operation": [a if a == b else f"{a} → {b}" for a, b in zip(df["name"], df["name_b"], strict=True)],
            "matched by": df["matched_by"],
            "A ms": df["a_us"] / 1e3,
            "B ms": df["b_us"] / 1e3,
            "change ms": df["delta_us"] / 1e3,
            "why": df["why"],
        }
    )


def _only(ops: dict[str, Any]) -> list[Any]:
    out = []
    for key, words in (("only_in_a", "Only in A"), ("only_in_b", "Only in B")):
        rows = ops.get(key) or []
        if rows:
            text = ", ".join(f"{r['name']} ({_ms(r['us_per_step'])} ms)" for r in rows[:8])
            out.append(html.P(f"{words}: {text}", className="muted"))
    return out


def _collectives(rows: list[dict[str, Any]]) -> pd.DataFrame:
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows)
    return pd.DataFrame(
        {
            "group": df["role"],
            "op": df["op"],
            "bytes": df["bytes"],
            "effective GB/s A → B": [
                f"{a:.3g} → {b:.3g}" for a, b in zip(df["a_eff_busbw_gbps"], df["b_eff_busbw_gbps"], strict=True)
            ],
            "transfer GB/s A → B": [
                f"{a:.3g} → {b:.3g}" for a, b in zip(df["a_busbw_gbps"], df["b_busbw_gbps"], strict=True)
            ],
            "skew ms A → B": [f"{_ms(a)} → {_ms(b)}" for a, b in zip(df["a_skew_us"], df["b_skew_us"], strict=True)],
            "change": df["cause"],
        }
    )


def _findings(f: dict[str, Any]) -> html.Div:
    items = [html.Li(f"appeared: {x['severity']} {x['kind']}: {x['summary']}") for x in f["appeared"]]
    items += [html.Li(f"gone: {x['severity']} {x['kind']}: {x['summary']}") for x in f["disappeared"]]
    items += [
        html.Li(f"{p['a']['kind']}: {p['a']['severity']} → {p['b']['severity']}: {p['b']['summary']}")
        for p in f["changed_severity"]
    ]
    if not items:
        return html.Div("no finding appeared or disappeared", className="muted")
    return html.Div(html.Ul(items), id="compare-findings")


def register(app: Dash, data: RunData) -> None:
    """No callbacks: the page is built whole from the comparison."""
