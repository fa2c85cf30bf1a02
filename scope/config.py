"""scope's config files for an input: `scope.toml` beside it, else `[tool.scope]` of a `pyproject.toml`
beside it or in the current folder (the communication-kernel rules, scope.ingest.comm_rules, and the
user's signature rows, analyzers/diagnose/knowledge/user_signatures.py, are read from them).

A pyproject.toml is the project's file, shared with every other tool: one of them may accept what TOML
does not (a duplicate key under [tool.black] stopped every `scope analyze` with exit 3). So only scope's
own table is scope's business: when the whole file is not valid TOML, its [tool.scope] tables are read
alone, and the rest costs a note; when scope's table itself is broken, that is an error naming the file.
A scope.toml is all scope's: any error in it is one.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.errors import ScopeError
from scope.typed_cache import typed_lru_cache
from scope.warnings import InputWarning

if TYPE_CHECKING:
    from scope.inputs import Inventory

# A table header line: [a.b] or [[a.b]] (keys may be quoted), with an optional comment after it.
_HEADER = re.compile(r"^\s*\[\[?\s*(?P<key>[^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")
NOTE_KEY = "\0scope-note"  # where _read_toml leaves the note about a salvaged pyproject.toml


def config_tables(inputs: Inventory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """(file, scope's table in it) of each config file for PATH in the order they are tried: scope.toml
    beside the input, then [tool.scope] of pyproject.toml beside it and in the current folder. The input's
    own files are those its inventory lists (scope.inputs), each read once whoever asks (the comm-kernel
    rules, diagnose's signature rows)."""
    for file, data in config_files(inputs):
        if file.name == "scope.toml":
            yield file, data
            continue
        tool = data.get("tool", {})
        table = tool.get("scope", {}) if isinstance(tool, dict) else {}
        yield file, table if isinstance(table, dict) else {}


def config_files(inputs: Inventory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """(file, its whole content as read) for config_tables: beside one file, its folder's; each file read
    once per inventory."""
    folder = inputs.path.parent if inputs.layout == "file" else inputs.path

    def beside(name: str) -> Path | None:
        if inputs.layout != "file":
            return inputs.config(name)
        candidate = folder / name
        return candidate if candidate.is_file() else None

    def read(file: Path) -> dict[str, Any]:
        return inputs.read_once(file, _read_toml)

    scope_toml = beside("scope.toml")
    if scope_toml is not None:
        yield scope_toml, read(scope_toml)
    here = Path.cwd() / "pyproject.toml"
    mine = beside("pyproject.toml")
    for candidate in dict.fromkeys(p for p in (mine, here if here.is_file() else None) if p is not None):
        if candidate is here and mine is not None and here.resolve() == mine.resolve():
            continue  # the input's folder is the current folder: read once
        yield candidate, read(candidate)


def config_notes(inputs: Inventory) -> list[InputWarning]:
    """Notes on the config files PATH's analysis read: a pyproject.toml that is not valid TOML, of which
    only [tool.scope] was read (the analysis is complete: scope's own table was whole)."""
    return [
        InputWarning(file=str(file), what=str(data[NOTE_KEY]))
        for file, data in config_files(inputs)
        if NOTE_KEY in data
    ]


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    if importlib.util.find_spec("tomli") is None:  # pragma: no cover - 3.10
        raise ScopeError("reading scope's config on Python 3.10 needs tomli: pip install tomli")
    import tomli  # pragma: no cover - 3.10

    return tomli  # pragma: no cover - 3.10


def _read_toml(path: Path) -> dict[str, Any]:
    """The file's content, read once while it is unchanged (a command without an inventory asks for it
    once per reader: the signature rows, the notes; a 40,000-row file took 10 s a read)."""
    try:
        st = path.stat()
    except OSError as exc:
        raise ScopeError(f"{path}: cannot read the config file ({exc.strerror or exc})") from None
    return _read_toml_as_of(path, st.st_size, st.st_mtime_ns)


@typed_lru_cache(maxsize=8)
def _read_toml_as_of(path: Path, size: int, mtime_ns: int) -> dict[str, Any]:
    toml = _toml()
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScopeError(f"{path}: cannot read the config file ({exc})") from None
    try:
        data: dict[str, Any] = toml.loads(text)
        return data
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError, or an integer of 5,000 digits
        if path.name != "pyproject.toml":
            raise ScopeError(f"{path}: cannot read the config file ({str(exc)[:200]})") from None
        whole = str(exc)[:200]
    own = scope_sections(text)
    try:
        mine: dict[str, Any] = toml.loads(own) if own else {}
    except (ValueError, RecursionError) as exc:
        raise ScopeError(f"{path}: its [tool.scope] table is not valid TOML ({str(exc)[:200]})") from None
    if own:
        what = f"not valid TOML ({whole}); only its [tool.scope] table was read, the rest is other tools'"
    else:
        what = f"not valid TOML ({whole}); it has no [tool.scope] table, so nothing in it is scope's"
    return {**mine, NOTE_KEY: what}


def scope_sections(text: str) -> str:
    """The lines of TEXT's [tool.scope] tables and sub-tables ([tool.scope.x], [[tool.scope.signatures]]),
    headers included, as a TOML document of their own."""
    keep = False
    out: list[str] = []
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header is not None:
            key = re.sub(r"\s*\.\s*", ".", header.group("key")).replace('"', "").replace("'", "")
            keep = key == "tool.scope" or key.startswith("tool.scope.")
        if keep:
            out.append(line)
    return "\n".join(out) + ("\n" if out else "")
