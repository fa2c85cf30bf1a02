"""Time the dashboard's page callbacks on a synthetic 1,024-rank run (target: each under 2 s).

    .venv/bin/python benchmarks/dashboard.py [--ranks 1024] [--steps 50] [--out DIR] [--browser]

Writes the synthetic store once (benchmarks/dashboard_synth.py; reused when DIR already holds it),
loads it as the dashboard does, then calls every page's callbacks over HTTP through the Flask test
client, exactly as the browser would, reporting time and response size. With --browser it also
loads every page in headless Chromium and times until its graphs are drawn.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: `from benchmarks import ...` needs the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import dashboard_synth
from scope.store import analysis_path

LIMIT_S = 2.0


class DashClient:
    """Calls a Dash app's callbacks through its HTTP endpoint, as the browser's renderer does."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.client = app.server.test_client()

    def call(
        self,
        outputs: list[str],
        inputs: dict[str, Any],
        state: dict[str, Any] | None = None,
        changed: list[str] | None = None,
    ) -> tuple[dict[str, Any], int]:
        """outputs/inputs as 'id.prop'; returns (response JSON, bytes)."""

        def spec(items: dict[str, Any]) -> list[dict[str, Any]]:
            out = []
            for key, value in items.items():
                cid, prop = key.rsplit(".", 1)
                out.append({"id": cid, "property": prop, "value": value})
            return out

        out_specs = [{"id": o.rsplit(".", 1)[0], "property": o.rsplit(".", 1)[1]} for o in outputs]
        key = outputs[0] if len(outputs) == 1 else ".." + "...".join(outputs) + ".."
        body = {
            "output": key,
            "outputs": out_specs[0] if len(outputs) == 1 else out_specs,
            "inputs": spec(inputs),
            "state": spec(state or {}),
            "changedPropIds": changed or list(inputs)[:1],
        }
        resp = self.client.post("/_dash-update-component", data=json.dumps(body), content_type="application/json")
        if resp.status_code not in (200, 204):
            raise RuntimeError(f"callback {key} -> HTTP {resp.status_code}: {resp.data[:500]!r}")
        return (resp.get_json() if resp.status_code == 200 else {}), len(resp.data)


def page_calls(ranks: int, steps: int) -> list[tuple[str, list[str], dict[str, Any], dict[str, Any]]]:
    """(label, outputs, inputs, state) for every page render and every page callback."""
    route = ["page.children", "nav.children"]
    plan = dashboard_synth.plan_for(ranks, steps)
    calls = [
        (f"route {p}", route, {"url.pathname": p, "url.search": "", "data-version.data": 0}, {})
        for p in ("/", "/heatmap", "/timeline", "/collectives", "/counters", "/failure")
    ]
    calls += [
        (
            "route /heatmap?rank&step",
            route,
            {"url.pathname": "/heatmap", "url.search": f"?rank={plan.straggler}", "data-version.data": 0},
            {},
        ),
        (
            "heat-map step time",
            ["heatmap-graph.figure"],
            {"heatmap-metric.value": "step_us", "heatmap-relative.value": []},
            {"heatmap-focus.data": {}},
        ),
        (
            "heat-map compute, relative",
            ["heatmap-graph.figure"],
            {"heatmap-metric.value": "compute_us", "heatmap-relative.value": ["relative"]},
            {"heatmap-focus.data": {}},
        ),
        (
            "heat-map cell click",
            ["heatmap-detail.children"],
            {"heatmap-graph.clickData": {"points": [{"x": plan.hot_step, "y": plan.hot_rank}]}},
            {"heatmap-focus.data": {}, "heatmap-metric.value": "step_us"},
        ),
    ]
    timeline_outputs = [
        "timeline-graph.figure",
        "timeline-collective.options",
        "timeline-collective.value",
        "timeline-notes.children",
        "timeline-extra.children",
    ]
    for label, ranks_text, span, view in (
        ("timeline 24 lanes", "", 1, "ranks"),
        ("timeline 64 lanes, 4 steps", f"0-{min(ranks, 64) - 1}", 4, "ranks"),
        ("timeline pipeline view", "", 1, "pipeline"),
    ):
        calls.append(
            (
                label,
                timeline_outputs,
                {
                    "timeline-step.value": plan.hot_step,
                    "timeline-span.value": span,
                    "timeline-ranks.value": ranks_text,
                    "timeline-collective.value": None,
                    "timeline-view.value": view,
                    "timeline-focus.data": plan.straggler,
                },
                {},
            )
        )
    coll_outputs = [
        "coll-skew.figure",
        "coll-busbw.figure",
        "coll-last.figure",
        "coll-summary.children",
        "coll-slowest.children",
    ]
    calls += [
        ("collectives all", coll_outputs, {"coll-pg.value": "__all__", "coll-op.value": "__all__"}, {}),
        ("collectives tp3", coll_outputs, {"coll-pg.value": "tp3", "coll-op.value": "__all__"}, {}),
        (
            "counters",
            [
                "counters-table.options",
                "counters-table.value",
                "counters-column.options",
                "counters-column.value",
                "counters-graph.figure",
            ],
            {
                "counters-host.value": f"node{plan.straggler // dashboard_synth.TP:03d}",
                "counters-table.value": None,
                "counters-column.value": None,
            },
            {},
        ),
        (
            "live tick",
            ["data-version.data", "live-status.children"],
            {"live-tick.n_intervals": 1},
            {"data-version.data": 0},
        ),
    ]
    return calls


def time_callbacks(store: Path, ranks: int, steps: int, repeat: int = 2) -> list[dict[str, Any]]:
    from scope.app.server import create_app

    started, cpu = time.perf_counter(), time.process_time()
    app = create_app(store, refresh_s=5.0, analyze=False)
    load = {"call": "load snapshot (create_app)", "seconds": time.perf_counter() - started, "bytes": 0}
    results = [{**load, "cpu_seconds": time.process_time() - cpu}]
    client = DashClient(app)
    for label, outputs, inputs, state in page_calls(ranks, steps):
        best, size = float("inf"), 0
        first = first_cpu = None
        for _ in range(repeat):
            t, cpu = time.perf_counter(), time.process_time()
            _resp, size = client.call(outputs, inputs, state)
            elapsed = time.perf_counter() - t
            if first is None:
                first, first_cpu = elapsed, time.process_time() - cpu
            best = min(best, elapsed)
        results.append({"call": label, "seconds": first, "cpu_seconds": first_cpu, "best_seconds": best, "bytes": size})
    return results


def time_browser(store: Path, shots: Path | None = None) -> list[dict[str, Any]]:
    """Full page loads in headless Chromium (until the network is idle: that wait alone is 0.5 s)."""
    from scope.app.server import create_app

    from tests.browser_util import ConsoleLog, browser_session, serve_in_thread

    app = create_app(store, refresh_s=0, analyze=False)
    out = []
    with serve_in_thread(app) as base, browser_session() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        console = ConsoleLog(page)
        for path in ("/", "/heatmap", "/timeline", "/collectives", "/counters", "/failure"):
            t = time.perf_counter()
            page.goto(base + path)
            page.wait_for_selector("#page > *", timeout=30_000)
            page.wait_for_load_state("networkidle", timeout=30_000)
            elapsed = time.perf_counter() - t
            errors = console.take()
            out.append({"call": f"browser {path} (+idle wait)", "seconds": elapsed, "bytes": 0, "errors": errors})
            if shots:
                page.screenshot(path=str(shots / f"bench-{path.strip('/') or 'overview'}.png"), full_page=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--out", type=Path, default=None, help="where to write the synthetic run (default: temp)")
    parser.add_argument("--browser", action="store_true", help="also time full page loads in headless Chromium")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--shots", type=Path, default=None, help="with --browser: save page screenshots here")
    args = parser.parse_args()
    if args.browser:  # before minutes of synthesis: a missing playwright fails now, with the install command
        from scope.deps import require
        from scope.errors import ScopeError

        try:
            require(("playwright",), "--browser")
        except ScopeError as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            return exc.exit_code
    root = args.out or Path(tempfile.mkdtemp(prefix="scope-dash-bench-"))
    store = root / "store"
    if not analysis_path(store).is_file():
        t = time.perf_counter()
        dashboard_synth.synthesize(root, ranks=args.ranks, steps=args.steps)
        print(f"synthesized {args.ranks} ranks x {args.steps} steps in {time.perf_counter() - t:.1f} s: {root}")
    results = time_callbacks(store, args.ranks, args.steps)
    if args.browser:
        results += time_browser(store, args.shots)
    worst = 0.0
    print(f"{'call':<34} {'first s':>8} {'cpu s':>8} {'best s':>8} {'KiB':>8}")
    for r in results:
        best = r.get("best_seconds", r["seconds"])
        print(
            f"{r['call']:<34} {r['seconds']:>8.3f} {r.get('cpu_seconds', 0):>8.3f} {best:>8.3f} "
            f"{r['bytes'] / 1024:>8.0f}"
        )
        if r.get("errors"):
            print(f"  console errors: {r['errors']}")
        if not r["call"].startswith(("load", "browser")):
            worst = max(worst, r["seconds"])
    print(f"slowest callback: {worst:.3f} s (limit {LIMIT_S} s) -> {'OK' if worst < LIMIT_S else 'TOO SLOW'}")
    if args.json:
        args.json.write_text(json.dumps({"ranks": args.ranks, "steps": args.steps, "results": results}, indent=1))
    return 0 if worst < LIMIT_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
