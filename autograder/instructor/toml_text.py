"""TOML text for the plain data a spec holds (tomllib only reads).

Enough of TOML for specs: strings, integers, floats, booleans, arrays, inline
tables inside arrays, tables and arrays of tables. ``dumps`` checks its own
output by reading it back, so a value it cannot write faithfully is an error,
never a silently different spec.
"""
from __future__ import annotations

import json
import math
import re
import tomllib

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"a spec value must be a string, number, boolean, array or table; got {type(v).__name__}")


def _is_table_array(v) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def _table(data: dict, path: list[str], out: list[str]) -> None:
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict) and not _is_table_array(v)}
    for k, v in scalars.items():
        out.append(f"{_key(k)} = {_value(v)}")
    for k, v in data.items():
        if isinstance(v, dict):
            # A table of tables only needs no header of its own ([dims.M] implies [dims]).
            if not v or any(not isinstance(x, dict) and not _is_table_array(x) for x in v.values()):
                out += ["", f"[{'.'.join(_key(p) for p in path + [k])}]"]
            _table(v, path + [k], out)
    for k, v in data.items():
        if _is_table_array(v):
            for row in v:
                out += ["", f"[[{'.'.join(_key(p) for p in path + [k])}]]"]
                _table(row, path + [k], out)


def dumps(data: dict, header: str = "") -> str:
    out = [f"# {line}" if line else "#" for line in header.splitlines()]
    _table(data, [], out)
    text = "\n".join(out).strip("\n") + "\n"
    if tomllib.loads(text) != data:
        raise ValueError("the TOML written does not read back as the same data")
    return text
