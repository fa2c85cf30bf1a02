"""The Dash app: a shell (navigation, live status), a router over app.pages, access control, `serve()`."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import sys
import threading
import traceback
import webbrowser
from pathlib import Path
from typing import Any

import dash
from dash import Input, Output, State, dcc, html, no_update
from flask import Response, request
from scope.app.data import RunData
from scope.app.links import parse_search
from scope.app.pages import PAGES

from scope.errors import EXIT_USAGE, ScopeError

TOKEN_COOKIE = "scope_token"
TOKEN_HEADER = "X-Scope-Token"
DEFAULT_REFRESH_S = 5.0
log = logging.getLogger("scope.dashboard")


def create_app(
    path: str | Path,
    token: str | None = None,
    refresh_s: float = DEFAULT_REFRESH_S,
    analyze: bool = True,
    compare: str | Path | None = None,
) -> dash.Dash:
    """A dashboard of the run at `path` (run directory, trace folder or store); nothing else is served.

    When the run has not been analyzed, or its inputs are newer than the analysis, the analysis starts
    in the background at once; with `refresh_s` > 0 pages refresh as new data lands.
    """
    data = RunData(Path(path), analyze=analyze, compare=compare)  # B: the Compare page's, per app
    app = dash.Dash(
        __name__,
        assets_folder=str(Path(__file__).parent / "assets"),
        title="scope",
        update_title=None,  # type: ignore[arg-type]  # documented by dash ("None or ''"), annotated str
        suppress_callback_exceptions=True,
        serve_locally=True,
    )
    app.layout = shell(data, refresh_s)
    _register_shell(app, data)
    for page in PAGES:
        page.register(app, data)
    if token:
        protect(app.server, token)
    _secure_headers(app.server)
    app.scope_data = data  # type: ignore[attr-defined]  # for tests and the benchmark
    if data.is_stale():
        data.start_analysis()
    return app


def shell(data: RunData, refresh_s: float) -> html.Div:
    name = data.run_root.name or str(data.run_root)
    return html.Div(
        [
            dcc.Location(id="url", refresh="callback-nav"),
            dcc.Store(id="data-version", data=data.snapshot.version),
            dcc.Interval(id="live-tick", interval=max(1.0, refresh_s) * 1000, disabled=refresh_s <= 0),
            html.Header(
                [
                    html.Span("scope", className="brand"),
                    html.Span(name, className="run-name", title=str(data.path)),
                    html.Nav(id="nav", className="nav"),
                    html.Span(id="live-status", className="live-status"),
                ]
            ),
            html.Main(id="page", className="page"),
        ]
    )


def nav_links(pathname: str) -> list[Any]:
    return [
        dcc.Link(
            page.TITLE,
            href=page.PATH,
            id=f"nav-{page.__name__.rsplit('.', 1)[-1]}",
            className="nav-link active" if pathname == page.PATH else "nav-link",
        )
        for page in PAGES
    ]


def status_line(data: RunData) -> str:
    if data.analyzing:
        return "analyzing…"
    if data.message:
        return data.message
    snap = data.snapshot
    if not snap.analyzed:
        return "not analyzed"
    fr = snap.table("fr")  # logs and dumps alone: the ranks are those of the dumps
    ranks = len(snap.ranks) or (fr["rank"].nunique() if fr is not None and "rank" in fr.columns else 0)
    found = f"{len(snap.findings)} finding{'s' if len(snap.findings) != 1 else ''}"
    return f"{ranks:,} ranks · {found}" if ranks else found


def _register_shell(app: dash.Dash, data: RunData) -> None:
    by_path = {page.PATH: page for page in PAGES}

    @app.callback(
        Output("page", "children"),
        Output("nav", "children"),
        Input("url", "pathname"),
        Input("url", "search"),
        Input("data-version", "data"),
    )
    def route(pathname: str | None, search: str | None, _version: int) -> tuple[Any, Any]:
        pathname = pathname or "/"
        page = by_path.get(pathname)
        if page is None:
            return html.Div([html.H2("Not found"), dcc.Link("Back to the overview", href="/")]), nav_links(pathname)
        try:
            return page.layout(data, parse_search(search)), nav_links(pathname)
        except Exception as exc:  # one broken view must not take the others down
            log.error("page %s failed:\n%s", pathname, traceback.format_exc())
            return html.Div(
                [html.H2(page.TITLE), html.Pre(f"This view failed: {type(exc).__name__}: {exc}", className="error")]
            ), nav_links(pathname)

    @app.callback(
        Output("data-version", "data"),
        Output("live-status", "children"),
        Input("live-tick", "n_intervals"),
        State("data-version", "data"),
    )
    def tick(_n: int | None, current: int | None) -> tuple[Any, Any]:
        version = data.poll()
        return (version if version != current else no_update), status_line(data)


def protect(server: Any, token: str) -> None:
    """Every request must carry the token: ?token=, the X-Scope-Token header, or the cookie set on first use."""

    def supplied() -> str:
        auth = request.headers.get("Authorization", "")
        bearer = auth[7:] if auth.startswith("Bearer ") else ""
        return (
            request.args.get("token")
            or request.headers.get(TOKEN_HEADER)
            or bearer
            or request.cookies.get(TOKEN_COOKIE)
            or ""
        )

    @server.before_request
    def check_token() -> Response | None:
        if not hmac.compare_digest(supplied().encode(), token.encode()):
            return Response(
                "scope dashboard: missing or wrong access token (open the URL printed by "
                "`scope dashboard`, with ?token=...)\n",
                status=401,
                mimetype="text/plain",
            )
        return None

    @server.after_request
    def remember_token(response: Response) -> Response:
        if request.args.get("token"):
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict")
        return response


def _secure_headers(server: Any) -> None:
    @server.after_request
    def headers(response: Response) -> Response:
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")  # the token may sit in the URL
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response


def loopback_hosts_only(server: Any) -> None:
    """Without a token on a loopback address, answer only requests addressed to this machine by a
    loopback name: a web page elsewhere that rebinds its own DNS name to 127.0.0.1 (DNS rebinding)
    sends its name in the Host header and is refused."""

    @server.before_request
    def check_host() -> Response | None:
        if _is_loopback(host_name(request.host or "")):
            return None
        return Response(
            "scope dashboard: refused: this server answers only requests to localhost / 127.0.0.1 "
            "(give --token to serve it under another name)\n",
            status=403,
            mimetype="text/plain",
        )


def host_name(host_header: str) -> str:
    """The name in a Host header, without its port: 'localhost:8050' -> 'localhost', '[::1]:8050' -> '::1'."""
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")]
    return host_header.rsplit(":", 1)[0]


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def serve(
    path: str | Path,
    host: str = "127.0.0.1",
    port: int = 8050,
    token: str | None = None,
    open_browser: bool = False,
    refresh_s: float = DEFAULT_REFRESH_S,
    stop_after_s: float | None = None,
    compare: str | Path | None = None,
    free_port_if_taken: bool = False,
) -> None:
    """Serve the dashboard until interrupted (or for `stop_after_s` seconds). Binds loopback unless told
    otherwise. With `free_port_if_taken` (the demo, which cannot be given --port through `make demo`), a
    port another program holds gives way to a free one, said on stderr; the URL printed is the one served."""
    from werkzeug.serving import make_server

    from scope.ports import port_taken

    if token is not None and not token.strip():
        raise ScopeError("an empty --token protects nothing: give a token, or leave --token out", EXIT_USAGE)
    app = create_app(path, token=token, refresh_s=refresh_s, compare=compare)
    if not token and _is_loopback(host):
        loopback_hosts_only(app.server)
    if free_port_if_taken and port_taken(host, port):
        print(f"scope dashboard: port {port} is in use by another program; serving on a free port", file=sys.stderr)
        port = 0
    try:
        server = make_server(host, port, app.server, threaded=True)
    except OSError as exc:
        raise ScopeError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} (try another --port)", EXIT_USAGE
        ) from None
    except SystemExit:  # werkzeug reports a port in use itself, then exits
        raise ScopeError(f"cannot listen on {host}:{port}: address in use (try another --port)", EXIT_USAGE) from None
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{server.server_port}/" + (f"?token={token}" if token else "")
    if not _is_loopback(host) and not token:
        print(
            f"scope dashboard: warning: listening on {host} without --token: anyone who can reach this "
            "port can read the run",
            file=sys.stderr,
        )
    print(f"scope dashboard: serving {app.scope_data.path} at {url}  (Ctrl-C to stop)", file=sys.stderr, flush=True)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    if stop_after_s:
        stopper = threading.Timer(stop_after_s, server.shutdown)
        stopper.daemon = True
        stopper.start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
