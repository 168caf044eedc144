"""Literals and programs in a checked program document, as the normal form
reads them (pure data; no JAX): shared by ``normal`` and ``grids``."""
from __future__ import annotations

import base64
from typing import Any

import numpy as np

SIGNED = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
NUMERIC = frozenset({*SIGNED, "uint8", "uint16", "uint32", "uint64", "bool", "float16", "float32", "float64"})


def _program_of(value: Any) -> tuple[dict, list] | None:
    if isinstance(value, dict) and isinstance(value.get("jx"), dict):
        return value["jx"], []
    if isinstance(value, dict) and isinstance(value.get("cjx"), dict) and isinstance(value["cjx"].get("jaxpr"), dict):
        return value["cjx"]["jaxpr"], list(value["cjx"].get("consts", []))
    return None


def _dtype(atom: dict) -> str | None:
    aval = atom.get("aval")
    if isinstance(aval, dict) and isinstance(aval.get("sa"), list) and len(aval["sa"]) >= 2:
        dt = aval["sa"][1]
        return dt.get("dt") if isinstance(dt, dict) else None
    return None


def _scalar(atom: dict) -> int | float | bool | None:
    """The value of a scalar literal of a numeric type, else None."""
    if "lit" not in atom or _dtype(atom) not in NUMERIC:
        return None
    aval = atom["aval"]["sa"]
    if aval[0] != []:
        return None
    v = atom["lit"]
    if isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, dict) and isinstance(v.get("s"), list) and len(v["s"]) == 2 and \
            isinstance(v["s"][1], (bool, int, float)):
        return v["s"][1]
    if isinstance(v, dict) and isinstance(v.get("a"), list) and len(v["a"]) == 3:
        dtype, shape, data = v["a"]
        if dtype in NUMERIC and shape == [] and isinstance(data, str):
            raw = np.frombuffer(base64.b64decode(data, validate=True), dtype=np.dtype(dtype))
            return raw[0].item() if raw.size == 1 else None
    return None
