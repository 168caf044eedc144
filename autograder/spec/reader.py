"""Typed access to one TOML table, with errors that name the file, the key, the
rule and the value seen."""
from __future__ import annotations

import difflib
import math
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class SpecError(ValueError):
    """A spec that breaks a rule: names the file, the key, the rule and the value seen."""

    def __init__(self, file: Path | str, key: str, rule: str, value: Any):
        self.file, self.key, self.rule, self.value = str(file), key, rule, value
        super().__init__(f"{file}: key '{key}': {rule}; got {value!r}")


# While a reference page is generated (``recording``): every key a reader asks
# for, with its rule and default, so the page is the reader's own account.
_RECORD: list[tuple[str, str, Any]] | None = None


@contextmanager
def recording():
    """Collect (key, rule, default) for every key read inside the block."""
    global _RECORD
    _RECORD, seen = [], None
    try:
        yield _RECORD
    finally:
        seen, _RECORD = _RECORD, None
    del seen


class Documented(str):
    """A default described in words (it depends on the rest of the spec)."""


class TableReader:
    """One TOML table and its key path (``cases[0].``) for error messages."""

    def __init__(self, file: Path, table: dict, prefix: str = ""):
        self.file, self.table, self.prefix = file, table, prefix

    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def fail(self, name: str, rule: str, value: Any) -> SpecError:
        return SpecError(self.file, self.key(name), rule, value)

    def get(self, name: str, types: type | tuple, rule: str, default: Any = ...,
            documented: str | None = None) -> Any:
        """``documented``: the default in words, for the reference page, when it
        depends on the rest of the spec (the value passed is this spec's)."""
        if _RECORD is not None:
            _RECORD.append((self.key(name), rule, Documented(documented) if documented else default))
        if name not in self.table:
            if default is ...:
                raise self.fail(name, f"is required ({rule})", None)
            return default
        value = self.table[name]
        allowed = types if isinstance(types, tuple) else (types,)
        if (isinstance(value, bool) and bool not in allowed) or not isinstance(value, allowed):
            raise self.fail(name, rule, value)
        return value

    def choice(self, name: str, options: tuple, default: Any = ...) -> Any:
        value = self.get(name, str, f"must be one of {list(options)}", default)
        if value not in options:
            raise self.fail(name, f"must be one of {list(options)}", value)
        return value

    def positive(self, name: str, default: Any = ..., integer: bool = False) -> Any:
        kind = "a positive integer" if integer else "a positive number"
        value = self.get(name, int if integer else (int, float), f"must be {kind}", default)
        if value is None and default is None:
            return None
        if not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
            raise self.fail(name, f"must be {kind}", value)
        return value

    def identifier(self, name: str) -> str:
        value = self.get(name, str, "must be a Python identifier")
        if not value.isidentifier():
            raise self.fail(name, "must be a Python identifier", value)
        return value

    def sub(self, name: str, default: Any = ..., documented: str | None = None) -> "TableReader":
        table = self.get(name, dict, "must be a table", {} if default is not ... else ..., documented)
        return TableReader(self.file, table, f"{self.key(name)}.")

    def table_of(self, name: str, value: Any, example: str) -> "TableReader":
        """A nested table under one of this table's own keys (``[dims.M]``)."""
        if not isinstance(value, dict):
            raise self.fail(name, f"must be a table such as {example}", value)
        return TableReader(self.file, value, f"{self.key(name)}.")

    def items(self, name: str) -> list["TableReader"]:
        rows = self.get(name, list, "must be an array of tables")
        out = []
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise SpecError(self.file, f"{self.key(name)}[{i}]", "must be a table", row)
            out.append(TableReader(self.file, row, f"{self.key(name)}[{i}]."))
        return out

    def unknown(self, allowed: set[str] | frozenset[str]) -> None:
        extra = sorted(set(self.table) - set(allowed))
        if extra:
            close = difflib.get_close_matches(extra[0], sorted(allowed), n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise self.fail(extra[0], f"is not a known key ({hint}known: {sorted(allowed)})",
                            self.table[extra[0]])
