"""Put on PYTHONPATH by `scope run`: activates the scope hook in each rank, then hands over to any
other sitecustomize further down the path (a site's own customisation keeps working)."""

import contextlib
import os
import sys


def _activate_scope_hook() -> None:
    try:
        # scope must be installed in the job's interpreter; if it is not, the job runs unhooked and says so.
        import scope.collectors.hook as hook

        hook.activate_from_env()
    except Exception as exc:  # the job must start whatever happens here
        with contextlib.suppress(Exception):
            sys.stderr.write(f"[scope hook] not active: {type(exc).__name__}: {exc}\n")


def _chain_next_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    saved_path = list(sys.path)
    me = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
        import importlib
        import importlib.util

        # No other sitecustomize is the usual case; one that fails (even on an import) is reported.
        if importlib.util.find_spec("sitecustomize") is not None:
            importlib.import_module("sitecustomize")
    except Exception as exc:
        with contextlib.suppress(Exception):
            sys.stderr.write(f"[scope hook] the next sitecustomize failed: {type(exc).__name__}: {exc}\n")
    finally:
        sys.path[:] = saved_path
        if me is not None:
            sys.modules["sitecustomize"] = me


_activate_scope_hook()
_chain_next_sitecustomize()
