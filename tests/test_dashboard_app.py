"""The dashboard server without a browser: access token, every callback over HTTP, first-load analysis
and live refresh of a run whose files change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scope.app import data as app_data
from scope.app.server import create_app

from benchmarks.dashboard import DashClient, page_calls
from benchmarks.dashboard_synth import plan_for, synthesize
from tests.conftest import shared_data

RANKS, STEPS = 16, 6


@pytest.fixture(scope="module")
def synthetic_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthesize(tmp_path_factory.mktemp("synthetic"), ranks=RANKS, steps=STEPS)


def test_token_is_required_on_every_request(synthetic_store: Path) -> None:
    app = create_app(synthetic_store, token="s3cret", refresh_s=0, analyze=False)
    client = app.server.test_client()
    assert client.get("/").status_code == 401
    assert client.get("/_dash-layout").status_code == 401
    assert client.post("/_dash-update-component", json={}).status_code == 401
    assert client.get("/?token=wrong").status_code == 401
    assert client.get("/_dash-layout", headers={"X-Scope-Token": "s3cret"}).status_code == 200
    assert client.get("/_dash-layout", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    first = client.get("/?token=s3cret")
    assert first.status_code == 200
    cookie = first.headers.get("Set-Cookie", "")
    assert "scope_token=" in cookie and "HttpOnly" in cookie
    # The browser's later requests (scripts, callbacks) carry the cookie, not the query string.
    assert client.get("/_dash-layout").status_code == 200
    assert first.headers["Referrer-Policy"] == "no-referrer"


def test_without_token_the_app_is_open_and_serves_no_other_path(synthetic_store: Path) -> None:
    app = create_app(synthetic_store, refresh_s=0, analyze=False)
    client = app.server.test_client()
    assert client.get("/").status_code == 200
    routed, _ = DashClient(app).call(
        ["page.children", "nav.children"],
        {"url.pathname": "/../../etc/passwd", "url.search": "?path=/etc", "data-version.data": 0},
    )
    assert "Not found" in json.dumps(routed)
    assert app.scope_data.quote("/etc/passwd", 1) == []  # evidence outside the run is never read


def test_every_page_callback_answers(synthetic_store: Path) -> None:
    app = create_app(synthetic_store, refresh_s=0, analyze=False)
    client = DashClient(app)
    plan = plan_for(RANKS, STEPS)
    answers = {}
    for label, outputs, inputs, state in page_calls(RANKS, STEPS):
        answers[label] = json.dumps(client.call(outputs, inputs, state)[0])
    assert "Failed: rank" in answers["route /"]  # the hang leads the verdict
    assert f"Rank {plan.hot_rank}, step {plan.hot_step}" in answers["heat-map cell click"]
    assert f"/timeline?rank={plan.hot_rank}&step={plan.hot_step}" in answers["heat-map cell click"]
    assert "last arriver: rank" in answers["timeline 24 lanes"]
    assert "pipeline bubble" in answers["timeline pipeline view"]
    assert f"tp{plan.slow_tp} / all_gather" in answers["collectives all"]
    assert "util_gpu_pct" in answers["counters"]
    assert "yes: " + str(plan.straggler) in answers["route /failure"]
    assert "RuntimeError: stuck here (synthetic)" in answers["route /failure"]


def test_missing_tables_give_empty_states(tmp_path: Path) -> None:
    store = synthesize(tmp_path, ranks=4, steps=3)
    for name in ("breakdown", "collectives", "pipeline", "fr"):
        (store / "tables" / f"{name}.parquet").unlink()
    report = json.loads((store / "analysis.json").read_text())
    for name in ("breakdown", "collectives", "pipeline", "fr"):
        report.pop(name)
    (store / "analysis.json").write_text(json.dumps(report))
    (tmp_path / "hosts").rename(tmp_path / "hosts-gone")
    client = DashClient(create_app(store, refresh_s=0, analyze=False))
    pages = {}
    for path in ("/heatmap", "/collectives", "/counters", "/timeline"):
        pages[path] = json.dumps(
            client.call(
                ["page.children", "nav.children"], {"url.pathname": path, "url.search": "", "data-version.data": 0}
            )[0]
        )
    assert "Only step time is available" in pages["/heatmap"]
    assert "No matched collectives" in pages["/collectives"]
    assert "No counters recorded" in pages["/counters"]
    # no collectives, so no point-to-point sends that would make a user look for pipeline stages: no note
    # (issue 41, item 17: it showed on every data-parallel timeline; tests/test_human_words.py)
    assert "No pipeline stages" not in pages["/timeline"]


def test_unanalyzed_folder_is_analyzed_on_first_load_and_refreshed_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point the app at a folder with one rank's trace, then let a second rank's trace land."""
    source = shared_data("hta", "trace_filter")
    monkeypatch.setattr(app_data, "MIN_ANALYSIS_GAP_S", 0.0)
    monkeypatch.setattr(app_data, "ANALYSIS_GAP_FACTOR", 0.0)
    run = tmp_path / "traces"
    run.mkdir()
    (run / "sampled_rank-0.json.gz").symlink_to(source / "sampled_rank-0.json.gz")
    app = create_app(run, refresh_s=1)
    data = app.scope_data
    assert data.analyzing, "an unanalyzed run starts its analysis at once"
    client = DashClient(app)
    tick = (["data-version.data", "live-status.children"], {"live-tick.n_intervals": 1}, {"data-version.data": 0})
    assert "analyzing" in json.dumps(client.call(*tick)[0])
    data.wait(120)
    assert data.snapshot.analyzed and data.snapshot.ranks == [0]
    version = data.snapshot.version
    data.poll()  # nothing changed: no new analysis
    assert not data.analyzing and data.snapshot.version == version
    (run / "sampled_rank-1.json.gz").symlink_to(source / "sampled_rank-1.json.gz")
    data.poll()
    assert data.analyzing
    data.wait(120)
    assert data.snapshot.ranks == [0, 1] and data.snapshot.version == version + 1
    answer, _ = client.call(*tick[:2], {"data-version.data": version})
    assert answer["response"]["data-version"]["data"] == version + 1


def test_counter_sources_and_event_marks(tmp_path: Path) -> None:
    """Raw sidecar tables become derived sources (bandwidth) and marks (error rises, throttling)."""
    import pandas as pd
    from scope.app import counter_series

    base = tmp_path / "hosts" / "node0" / "counters"
    ts = [10**18 + i * 10**9 for i in range(4)]
    (base / "ib").mkdir(parents=True)
    pd.DataFrame(
        {
            "ts_ns": ts,
            "device": "mlx5_0",
            "port": 1,
            "xmit_bytes": [0, 4000, 8000, 12000],
            "rcv_bytes": [0, 0, 0, 0],
            "symbol_error": [0, 0, 3, 3],
        }
    ).to_parquet(base / "ib" / "1-1-1.parquet")
    (base / "gpu").mkdir()
    pd.DataFrame(
        {"ts_ns": ts, "gpu": 0, "util_gpu_pct": [90, 90, 40, 90], "clocks_event_reasons": [0, 0x40, 0x40, 0]}
    ).to_parquet(base / "gpu" / "1-1-1.parquet")
    assert counter_series.hosts(tmp_path) == ["node0"]
    assert counter_series.sources(tmp_path, "node0") == ["ib bandwidth", "gpu", "ib"]
    bandwidth, derived = counter_series.read_source(tmp_path, "node0", "ib bandwidth")
    assert derived and bandwidth["xmit_bytes_per_s"].tolist() == [4000.0, 4000.0, 4000.0]
    labels = [label for _, _, label in counter_series.event_marks(tmp_path, "node0")]
    assert "symbol_error +3 (mlx5_0/1)" in labels
    assert "GPU 0 hw_thermal_slowdown" in labels
