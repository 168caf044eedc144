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
    """A fraction as a percentage with two significant digits (0.0047 -> 0.47%); past
    ten times, as a multiple (2.4e29 -> "2.4e+29 times"): a percentage of 1e31 reads as nothing."""
    if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0%"
    if abs(x) >= 10:
        return f"{x:.2g} times"
    return f"{x * 100:.0f}%" if abs(x) >= 1 else f"{x * 100:.2g}%"     # (990%, not 9.9e+02%)


def of_output(x) -> str:
    """An error's size next to the output's: "0.47% of the output's magnitude", and past
    ten times "2.4e+29 times the output's magnitude"."""
    said = pct(x)
    return f"{said} the output's magnitude" if said.endswith("times") else f"{said} of the output's magnitude"


def points(x: float) -> str:
    """Points as Gradescope shows them: up to two decimals, no trailing zeros."""
    return f"{round(float(x), 2):g}"
