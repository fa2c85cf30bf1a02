"""`scope compare` as text or Markdown, rendered from the comparison's JSON (the contract of
`scope compare --json`, built by scope.compare.Comparison.to_dict): the headline step change
and its causes as a budget difference, per rank, operations and kernels, collectives, findings."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from scope.render.text import grid
from scope.units import clip

if TYPE_CHECKING:
    from scope.compare.result import ComparisonResult
    from scope.render import Style

TOP_OPS = 12
TOP_RANKS = 32
TOP_ONLY = 6
NAME_WIDTH = 60


def render_compare(result: ComparisonResult, fmt: str = "text") -> str:
    data = result.to_dict()
    if fmt == "json":
        return json.dumps(data, indent=2, allow_nan=False) + "\n"
    sections = [headline(data), budget_section(data), host_section(data), ranks_section(data), ops_section(data)]
    sections += [collectives_section(data), memory_section(data), findings_section(data)]
    if fmt == "markdown":
        return _markdown(data, sections)
    out: list[str] = []
    for title, lines, table in sections:
        if not lines and not table:
            continue
        if title:
            out += ["", title]
        out += lines
        if table:
            out += grid(*table)
    return "\n".join(out).strip("\n") + "\n"


Section = tuple[str, list[str], tuple[list[str], list[list[str]]] | None]


def ms(us: Any, sign: bool = False) -> str:
    if us is None or (isinstance(us, float) and math.isnan(us)):
        return "-"
    return f"{us / 1000:+,.1f}" if sign else f"{us / 1000:,.1f}"


def _pct(part: float | None, whole: float | None) -> str:
    if part is None or not whole:
        return "-"
    return f"{100 * part / whole:+.1f}%"


def headline(data: dict[str, Any]) -> Section:
    s = data["step"]
    lines = [f"scope compare: A = {data['a']['path']}  ->  B = {data['b']['path']}"]
    if not data["comparable"]:
        lines.append("NOT COMPARABLE: " + "; ".join(data["not_comparable"]))
        lines.append("(the figures below are shown as they are; they do not explain one run by the other)")
    lines.append(
        f"Step time: mean {ms(s['a_mean_step_us'])} -> {ms(s['b_mean_step_us'])} ms "
        f"({ms(s['delta_mean_step_us'], True)} ms, {_pct(s['delta_mean_step_us'], s['a_mean_step_us'])}); "
        f"median {ms(s['a_median_step_us'])} -> {ms(s['b_median_step_us'])} ms "
        f"({_pct(s['delta_median_step_us'], s['a_median_step_us'])})"
    )
    causes = top_causes(data)
    if causes and (s["beyond_noise"] or s.get("mean_beyond_noise") or any(b["beyond_noise"] for b in s["buckets"])):
        lines.append("Largest causes (of the mean step): " + "; ".join(causes))
        host = top_causes({"step": data["host"]}, 4) if data.get("host") else []
        if host:
            lines.append("On the training thread: " + "; ".join(host))
    lines.append(
        f"Noise: +/-{ms(s['noise_us'])} ms (twice the larger step-to-step spread: A {ms(s['a_spread_us'])} ms, "
        f"B {ms(s['b_spread_us'])} ms; at least 2% of A's step)"
    )
    lines.append("Verdict: " + verdict_text(s))
    lines += [f"note: {n}" for n in data.get("notes", [])]
    return "", lines, None


def verdict_text(step: dict[str, Any]) -> str:
    """The comparison's sentence on the step (scope/compare/verdict.py); a JSON written before it had
    one is judged on its mean, as it was then."""
    if step.get("verdict"):
        return str(step["verdict"])
    return "the mean step changed beyond noise" if step["beyond_noise"] else "within noise: no real change"


def top_causes(data: dict[str, Any], n: int = 3) -> list[str]:
    """The budget buckets that moved most, as short phrases (for --fail-if-slower): of a comparison's
    JSON, or of {"step": its host budget}."""
    out = []
    for b in data["step"]["buckets"][:n]:
        if abs(b["delta_us"]) >= 1:
            noise = "" if b["beyond_noise"] else " (within noise)"
            out.append(f"{b['label']} {ms(b['delta_us'], True)} ms{noise}")
    return out


def budget_section(data: dict[str, Any]) -> Section:
    s = data["step"]
    buckets = s["buckets"]
    if not buckets:
        return "Where the time went: no step budget in these runs (step times only)", [], None
    title = (
        f"Where the {ms(s['delta_mean_step_us'], True)} ms went (mean step budget, largest change first; "
        "the changes add up to the step's change)"
    )
    return title, [], _budget_table(s)


def _budget_table(s: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    rows = [
        [b["label"], ms(b["a_us"]), ms(b["b_us"]), ms(b["delta_us"], True), "" if b["beyond_noise"] else "noise"]
        for b in s["buckets"]
    ]
    rows.append(["step", ms(s["a_mean_step_us"]), ms(s["b_mean_step_us"]), ms(s["delta_mean_step_us"], True), ""])
    return ["cause", "A ms", "B ms", "change ms", ""], rows


def host_section(data: dict[str, Any]) -> Section:
    h = data.get("host")
    if not h or not h["buckets"]:
        return "", [], None
    title = (
        f"On the training thread (host view of the same steps; {ms(h['delta_mean_step_us'], True)} ms, "
        "largest change first)"
    )
    return title, [], _budget_table(h)


def ranks_section(data: dict[str, Any]) -> Section:
    r = data["ranks"]
    lines = []
    for key, words in (
        ("became_stragglers", "became stragglers in B"),
        ("stopped_being_stragglers", "stopped being stragglers"),
        ("still_stragglers", "stragglers in both runs"),
    ):
        if r.get(key):
            lines.append(f"ranks {', '.join(map(str, r[key]))} {words}")
    if not r["matched"]:
        lines.insert(0, r["why_not"])
        rows = [[q["quantile"], ms(q["a_step_us"]), ms(q["b_step_us"]), ms(q["delta_us"], True)] for q in r["rows"]]
        return "Per rank (distribution of per-rank median steps)", lines, (["ranks", "A ms", "B ms", "change ms"], rows)
    ordered = sorted(r["rows"], key=lambda x: -abs(x.get("delta_us") or 0))[:TOP_RANKS]
    rows = [
        [
            str(x["rank"]),
            ms(x["a_step_us"]),
            ms(x["b_step_us"]),
            ms(x["delta_us"], True),
            f"{x['largest_change']} {ms(x['largest_change_us'], True)}" if x.get("largest_change") else "-",
            f"{x['largest_own_change']} {ms(x['largest_own_change_us'], True)}" if x.get("largest_own_change") else "-",
            _straggler(x),
        ]
        for x in ordered
    ]
    more = len(r["rows"]) - len(ordered)
    if more > 0:
        lines.append(f"(largest {len(ordered)} changes shown; {more} more ranks in --json)")
    headers = [
        "rank",
        "A ms",
        "B ms",
        "change ms",
        "largest budget change ms",
        "grew most vs the other ranks ms",
        "straggler",
    ]
    return "Per rank (median step; budget change of the mean step)", lines, (headers, rows)


def _straggler(row: dict[str, Any]) -> str:
    a, b = row.get("straggler_a"), row.get("straggler_b")
    return {(False, True): "became", (True, False): "stopped", (True, True): "both"}.get((bool(a), bool(b)), "-")


def ops_section(data: dict[str, Any]) -> Section:
    o = data["ops"]
    rows = []
    for x in o["changed"][:TOP_OPS]:
        name = x["name"] if x["name"] == x["name_b"] else f"{x['name']} -> {x['name_b']}"
        how = "" if x["matched_by"] == "name" else f" [{x['matched_by']}]"
        rows.append(
            [x["family"], clip(name, NAME_WIDTH) + how, ms(x["a_us"]), ms(x["b_us"]), ms(x["delta_us"], True), x["why"]]
        )
    lines = []
    for key, words in (("only_in_a", "Only in A"), ("only_in_b", "Only in B")):
        only = o[key][:TOP_ONLY]
        if only:
            items = ", ".join(f"{clip(x['name'], 50)} ({ms(x['us_per_step'])} ms)" for x in only)
            lines.append(
                f"{words}: {items}" + (f" and {len(o[key]) - TOP_ONLY} more" if len(o[key]) > TOP_ONLY else "")
            )
    lines += [f"note: {n}" for n in o.get("notes", [])]
    if not rows:
        return "Operations and kernels", lines, None
    headers = ["", "operation (per step, mean over ranks)", "A ms", "B ms", "change ms", "why"]
    return (
        "Operations and kernels, largest change first (CPU ops are inclusive of their children)",
        lines,
        (
            headers,
            rows,
        ),
    )


def collectives_section(data: dict[str, Any]) -> Section:
    c = data["collectives"]
    if not c["matched"] and not c["only_in_a"] and not c["only_in_b"]:
        return "", [], None
    rows = [
        [
            x["role"],
            x["op"],
            f"{x['bytes']:,}",
            f"{x['a_busbw_gbps']:.3g} -> {x['b_busbw_gbps']:.3g}",
            f"{x['a_eff_busbw_gbps']:.3g} -> {x['b_eff_busbw_gbps']:.3g}",
            f"{ms(x['a_skew_us'])} -> {ms(x['b_skew_us'])}",
            "lost bandwidth" if x["lost_bandwidth"] else ("gained bandwidth" if x["gained_bandwidth"] else ""),
        ]
        for x in c["matched"]
    ]
    lines = []
    for x in c["matched"]:
        if x["lost_bandwidth"] or x["gained_bandwidth"]:
            verb = "lost" if x["lost_bandwidth"] else "gained"
            lines.append(
                f"{x['op']} of {x['bytes']:,} B ({x['role']}) {verb} bandwidth: effective "
                f"x{x['eff_busbw_ratio']:.2f}; {x['cause']}"
            )
    for key, words in (("only_in_a", "only in A"), ("only_in_b", "only in B")):
        if c[key]:
            lines.append(f"Collectives {words}: " + ", ".join(f"{x['op']} of {x['bytes']:,} B" for x in c[key][:8]))
    headers = ["group", "op", "bytes", "transfer busbw GB/s", "effective GB/s", "skew ms", ""]
    title = "Collectives matched by (group, op, size): medians; effective = first arrival to last completion"
    return title, lines, (headers, rows)


def _size(n: Any) -> str:
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "–"
    return f"{n / 2**30:+.2f} GiB" if abs(n) >= 2**28 else f"{n / 2**20:+.1f} MiB"


def memory_section(data: dict[str, Any]) -> Section:
    """The peak memory change (traces recorded with profile_memory) and where it came from."""
    m = data.get("memory") or {}
    if m.get("change_bytes") is None:
        return "Memory", [], None
    a, b = m["peak_allocated_a"], m["peak_allocated_b"]
    lines = [f"peak allocated {_size(a).lstrip('+')} -> {_size(b).lstrip('+')} ({_size(b - a)})"]
    rows = [
        [
            f"{r['rank']} {r['device']}",
            _size(r.get("peak_allocated_a")).lstrip("+"),
            _size(r.get("peak_allocated_b")).lstrip("+"),
            _size(r.get("change_bytes")),
        ]
        for r in m["ranks"][:TOP_RANKS]
    ]
    for s in m.get("sites", [])[:TOP_ONLY]:
        lines.append(f"  {_size(s['change_bytes'])} at {clip(str(s['site']), NAME_WIDTH)} (snapshots' peak)")
    return "Memory (peak allocated per rank)", lines, (["rank", "A", "B", "change"], rows)


def findings_section(data: dict[str, Any]) -> Section:
    f = data["findings"]
    lines = []
    for x in f["appeared"]:
        lines.append(f"+ appeared: {x['severity'].upper()} {x['kind']}{_ranks(x)}: {x['summary']}")
    for x in f["disappeared"]:
        lines.append(f"- gone: {x['severity'].upper()} {x['kind']}{_ranks(x)}: {x['summary']}")
    for pair in f["changed_severity"]:
        a, b = pair["a"], pair["b"]
        lines.append(f"~ {a['kind']}{_ranks(b)}: {a['severity']} -> {b['severity']}: {b['summary']}")
    if not lines:
        kept = len(f["unchanged"])
        lines.append(
            f"no finding appeared or disappeared ({kept} in both runs)" if kept else "no findings in either run"
        )
    return "Findings", lines, None


def _ranks(x: dict[str, Any]) -> str:
    ranks = x.get("ranks") or []
    return f" ranks {', '.join(map(str, ranks[:8]))}" + (" ..." if len(ranks) > 8 else "") if ranks else ""


def _markdown(data: dict[str, Any], sections: list[Section]) -> str:
    from scope.render.markdown import code, escape, md_table

    out = [f"# scope compare: {code(str(data['a']['path']))} → {code(str(data['b']['path']))}"]
    for i, (title, lines, table) in enumerate(sections):
        if i == 0:
            lines = lines[1:]  # the headline's first line is the title above
        if not lines and not table:
            continue
        out += ["", f"## {escape(title)}"] if title else [""]
        out += [f"- {escape(line)}" for line in lines]  # names and findings from the runs: text, not Markdown
        if table:
            out += ["", *md_table(*table)]
    return "\n".join(out).rstrip() + "\n"


def text_of(result: ComparisonResult, style: Style) -> str:
    """The renderer table's entry (scope.render.RENDERERS)."""
    return render_compare(result, "text")


def markdown_of(result: ComparisonResult, style: Style) -> str:
    """The renderer table's entry (scope.render.RENDERERS)."""
    return render_compare(result, "markdown")
