"""The dashboard without a token answers only requests addressed to a loopback name (DNS rebinding);
an empty token is refused; a token can come from a file (out of `ps`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.app.server import create_app, host_name, loopback_hosts_only, serve

from scope.cli import main
from scope.errors import EXIT_USAGE, ScopeError

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_traces" / "healthy"


def test_host_names() -> None:
    assert [host_name(h) for h in ("localhost:8050", "[::1]:8050", "127.0.0.1", "evil.example:80")] == [
        "localhost",
        "::1",
        "127.0.0.1",
        "evil.example",
    ]


def test_a_rebound_name_is_refused_without_a_token(tmp_path: Path) -> None:
    app = create_app(SAMPLE, analyze=False, refresh_s=0)
    loopback_hosts_only(app.server)
    client = app.server.test_client()
    assert client.get("/", headers={"Host": "attacker.example:8050"}).status_code == 403
    assert client.get("/", headers={"Host": "127.0.0.1:8050"}).status_code == 200
    assert client.get("/", headers={"Host": "localhost:8050"}).status_code == 200


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(ScopeError, match="empty --token"):
        serve(SAMPLE, token="", port=0, stop_after_s=0.1)


def test_token_file_is_read_and_an_unreadable_one_is_a_usage_error(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "nope.txt"
    assert main(["dashboard", str(SAMPLE), "--token-file", str(missing)]) == EXIT_USAGE
    assert "--token-file" in capsys.readouterr().err
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    assert main(["dashboard", str(SAMPLE), "--token-file", str(empty), "--port", "0"]) == EXIT_USAGE
