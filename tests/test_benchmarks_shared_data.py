"""The benchmarks find the shared real data where the tests do: SCOPE_SHARED_DATA first (benchmarks/shared_data.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import diagnose_accuracy
from benchmarks.shared_data import shared_data


def test_the_variable_names_the_data_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SCOPE_SHARED_DATA", str(tmp_path))
    assert shared_data() == tmp_path


def test_without_the_variable_the_folder_above_the_checkout_holds_the_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCOPE_SHARED_DATA", raising=False)
    found = shared_data()
    assert found.name == "data" and found.parent.name == "shared"
    # the accuracy benchmark reads the one the tests read when the variable is set (tests/conftest.py)
    assert (diagnose_accuracy.DATA / "failure_corpus").is_dir()
