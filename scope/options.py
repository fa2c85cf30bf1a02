"""One analysis option, as data (what analyzers/options.py declares for each analyzer).

Its own small module: the CLI builds its flags from the options without loading the analysis code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scope.errors import EXIT_USAGE, ScopeError


@dataclass(frozen=True)
class Option:
    """One analysis option. `name` is the mapping key; the CLI flag is --name-with-dashes."""

    name: str
    type: type
    default: Any = None
    help: str = ""
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    group: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, value: Any) -> Any:
        """The value in this option's type (from a flag, a mapping or a form); None stays unset."""
        if value is None:
            return None
        try:
            if self.type is bool:
                parsed: Any = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
            elif self.type is list:  # a repeatable option: one value or several
                parsed = [value] if isinstance(value, str) else list(value)
            else:
                parsed = self.type(value)
        except (TypeError, ValueError):
            raise ScopeError(f"option {self.name}: {value!r} is not a {self.type.__name__}", EXIT_USAGE) from None
        if self.choices and parsed not in self.choices:
            raise ScopeError(f"option {self.name}: {parsed!r} is not one of {', '.join(self.choices)}", EXIT_USAGE)
        return parsed
