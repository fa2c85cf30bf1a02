"""Units and formats from one place (scope.units): what the dashboard's cards, tables and axes print."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scope.app import figures
from scope.app.pages.collectives import in_ms
from scope.app.pages.common import cell_text, metric_items

from scope import units


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("time_lost_us", 84_294.99, "84.3 ms"),
        ("held_up_us", 208_367.61, "208 ms"),
        ("t_ideal_s", 1.843, "1.84 s"),
        ("dur_ns", 850_000, "0.850 ms"),
        ("bytes", 1536, "1.50 KiB"),
        ("bytes", 12 * 2**20, "12.0 MiB"),
        ("bytes", 3 * 2**30, "3.00 GiB"),
        ("exposed_comm_pct", 62.345, "62.3%"),
        ("waste", 0.49, "49.0%"),
        ("last_arriver_share", 0.8, "80.0%"),
        ("busbw_gbps", 12.3456, "12.3 GB/s"),
        ("step_ratio", 2.6432, "2.64×"),
        ("persistent", True, "yes"),
        ("score", 0.35, "0.350"),
        ("m_s", 1.2193, "1.22"),  # the what-if's M_S: a symbol, not seconds
    ],
)
def test_a_quantity_reads_in_the_unit_its_name_says(name: str, value: float, text: str) -> None:
    assert units.quantity(name, value) == text


def test_finding_metrics_print_with_units_and_without_nested_records() -> None:
    items = metric_items(
        {
            "time_lost_us": 84_294.99,
            "held_up_us": 208_367.61,
            "waiting_for": [2],
            "details": {"pg": "74"},
            "also_missing_from": [{"pg": "41"}],
            "empty": None,
        }
    )
    assert items == ["time lost: 84.3 ms", "held up: 208 ms", "waiting for: 2"]


def test_table_cells_format_by_their_column() -> None:
    assert cell_text("skew_us", np.float64(150_000.0)) == "150 ms"
    assert cell_text("bytes", np.int64(4 * 2**20)) == "4.00 MiB"
    assert cell_text("seq", 20537) == "20537"  # no unit: as it is


def test_the_skew_axis_is_in_ms() -> None:
    stats = pd.DataFrame(
        {"group": ["0 all_reduce"], "q1": [1e3], "median": [15e4], "q3": [2e5], "lo": [0.0], "hi": [3e5], "mean": [1e5]}
    )
    fig = figures.distribution_figure(in_ms(stats), "skew", "ms")
    assert fig.data[0].median[0] == 150.0 and fig.layout.yaxis.title.text == "ms"


def test_a_percentage_counter_is_drawn_on_0_to_100_and_step_labels_sit_above_the_markers() -> None:
    ts = np.arange(10, dtype=np.int64) * 10**9
    series = pd.DataFrame({"ts_ns": ts, "entity": "gpu0", "value": [100.0] * 5 + [98.5] * 5})
    marks = [(2 * 10**9, 3 * 10**9, "straggler")]
    fig = figures.counter_figure(series, 0, "util", "util_gpu_pct", step_marks=[(1, 0, 5 * 10**9)], marks=marks)
    assert list(fig.layout.yaxis.range) == [0, 100.0]
    assert list(fig.layout.yaxis2.range) == [0, 1.04]  # the finding markers stay along the top edge
    assert fig.layout.yaxis.title.text == "util gpu (%)"
    assert all(a.yanchor == "bottom" for a in fig.layout.annotations)
    other = figures.counter_figure(series.assign(value=series["value"] * 10), 0, "t", "power_w")
    assert other.layout.yaxis.rangemode == "tozero"


def test_clip_keeps_short_text_and_cuts_long_text_to_the_limit_with_an_ellipsis() -> None:
    assert units.clip("all_reduce", 10) == "all_reduce"
    assert units.clip("all_reduce_coalesced", 10) == "all_reduc…" and len(units.clip("x" * 500, 80)) == 80
