"""How numbers are written in feedback: one way everywhere (messages and
templates alike), so a student never sees 0.47% next to 0.004658935058187875."""
from __future__ import annotations

import math


def num(x) -> str:
    """Three significant digits for floats; integers and text as they are."""
    if isinstance(x, bool) or not isinstance(x, float):
        return str(x)
    if math.isnan(x) or math.isinf(x):
        return str(x)
    if x == int(x) and abs(x) < 1e6:
        return str(int(x))
    return f"{x:.3g}"


def pct(x) -> str:
    """A fraction as a percentage with two significant digits (0.0047 -> 0.47%)."""
    if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0%"
    return f"{x * 100:.2g}%"


def points(x: float) -> str:
    """Points as Gradescope shows them: up to two decimals, no trailing zeros."""
    return f"{round(float(x), 2):g}"
