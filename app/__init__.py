"""The scope dashboard (Dash): `scope dashboard PATH` serves one run, read-only, on 127.0.0.1."""

from __future__ import annotations

from scope.app.server import create_app, serve

__all__ = ["create_app", "serve"]
