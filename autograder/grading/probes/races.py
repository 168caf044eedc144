"""Races and the DMA protocol: TPU interpret mode with ``detect_races`` on 1
and 2 cores, and with DMAs completing at their start instead of their wait."""
from __future__ import annotations

import re

from ...findings import Finding
from ...pallas_surface.release import (
    RACE_ACCESS,
    RACE_BEHAVIOUR,
    RACE_MARK,
    RACE_PARAMS,
    RACE_SWITCH,
    SEMAPHORE_MARK,
    SLICE,
)
from ...spec import ProbeTerms
from ..run.plan import Variant
from .base import DEFAULT_SEEDS, Exposes, Probe, ProbeResults

# The race detector changes nothing a kernel computes, so it rides on runs that
# happen anyway: on one core, the case's own test run in TPU interpret mode
# (plan.build turns it on there); on two, the grid-order probe's first seed.
RACES_1CORE = Variant("races-1core", "tpu-interpret", races=True, capture=True)
RACES_2CORES = Variant("races-2core", "tpu-interpret", record=True, races=True, capture=True,
                       params=(("num_cores_or_threads", 2), ("random_seed", DEFAULT_SEEDS[0])))


def plan_races(assignment, case, rubric, run_key) -> tuple[Variant, ...]:
    return (RACES_1CORE, RACES_2CORES,
            Variant("dma-eager", "tpu-interpret", capture=True,
                    params=(("dma_execution_mode", "eager"),)),
            # Run only when the case hung (see schedule): every axis 'arbitrary'.
            Variant("in-order", "tpu-interpret", in_order=True))


def _race_report(text: str) -> list[str]:
    """The race detector's first report: the two accesses, with the student's file by
    name only (the grader's folders mean nothing to a student) and without the
    vector clocks (they explain nothing to one either)."""
    lines = [re.sub(r"(?:/[^\s/,:]+)+/([^\s/,:]+\.py:\d+)", r"\1", ln) for ln in text.splitlines()
             if ln.strip() and not ln.strip().startswith("clock:")]
    return lines[:6]


def _accesses(report: list[str]) -> list[dict]:
    """The two conflicting accesses of the first report (release's pattern): read or
    write, the buffer, its element window, the device (or DMA) id, core and line."""
    found = []
    for line in report:
        m = RACE_ACCESS.search(line)
        if m is not None:
            found.append({"access": m["access"], "buffer": m["buffer"], "who": int(m["who"]),
                          "core": int(m["core"]), "where": m["where"].strip(),
                          "element_range": [[int(lo), int(hi)] for lo, hi in SLICE.findall(m["slices"])]})
    return found[:2]


def _placed(r: ProbeResults, accesses: list[dict]) -> dict:
    """The array the race is on, for the block map: both accesses on one HBM buffer,
    one a write, inside the output's shape: the output (the kernel writes no other
    HBM array). Otherwise nothing: the map is left out rather than guessed."""
    shape = list(r.assignment.output_shape(r.case))
    if len(accesses) != 2 or accesses[0]["buffer"] != accesses[1]["buffer"] \
            or "hbm" not in accesses[0]["buffer"] or all(a["access"] != "write" for a in accesses):
        return {}
    if any(len(a["element_range"]) != len(shape) or any(lo < 0 or hi > d for (lo, hi), d in
                                                         zip(a["element_range"], shape)) for a in accesses):
        return {}
    return {"operand": "output 0", "array_shape": shape}


def _race(r: ProbeResults) -> Finding | None:
    for cores in (1, 2):
        variant = f"races-{cores}core"
        o = r.outcomes.get(variant)
        if o is not None and (o.races_found or RACE_MARK in o.captured):
            report = _race_report(o.captured)
            accesses = _accesses(report)
            placed = _placed(r, accesses)
            # The pipeline writing one output block back from both cores (the index-map
            # scan's parallel-shared revisit, run), in a run that is right anyway: the same
            # values written twice, which no rung tells from one write (grading.unconfirmed
            # settles it). A DMA the kernel starts itself is its own claim: always charged.
            agree = len(accesses) == 2 and accesses[0]["buffer"] == accesses[1]["buffer"] \
                and "hbm" in accesses[0]["buffer"] \
                and all(a["access"] == "write" and a["where"] == "pallas_call" for a in accesses) \
                and r.passes(o, r.runs.get(variant)) is True
            # No core count here: a pl.kernel mesh runs on its own cores whatever the
            # run asked for; the block map's note says how many (feedback.maps).
            return r.finding("data-race", "the race detector found conflicting accesses",
                             variant=variant, report=report, cores=cores, accesses=accesses,
                             interpret_params={"detect_races": True, "num_cores_or_threads": cores,
                                               **r.runs[variant].params_dict, **RACE_PARAMS},
                             switch=RACE_SWITCH, behaviour=RACE_BEHAVIOUR, writes_agree=agree, **placed)
    return None


def _hang(r: ProbeResults) -> Finding | None:
    """Only the TPU interpreter blocks on DMA and semaphore waits: a kernel that
    hangs on the generic interpreter too hangs in its own code (an endless loop).
    A hang of the eager rerun alone, with the plain run right, is not charged: the
    grader may have run out of time (see probes.judge)."""
    generic = r.correctness.get("generic")
    generic_finished = generic is None or generic.ran
    on_wait = r.correctness.get("tpu-interpret")
    if on_wait is None or on_wait.status != "timeout" or on_wait.not_run or not generic_finished:
        return None
    if on_wait.phase == "trace":
        return None
    within = f" (no result within {on_wait.limit_s:g} s)" if on_wait.limit_s else ""
    in_order = r.outcomes.get("in-order")
    if in_order is not None and in_order.ok:
        right = r.passes(in_order, r.runs.get("in-order"))
        return r.finding("grid-order-dependence",
                         f"TPU interpret mode hung{within}, and with every grid axis 'arbitrary' (run in "
                         f"order) the same case finishes{' and is right' if right else ''}: a grid step "
                         "waits for work another step does (a DMA started in one step and waited in the "
                         "next), along an axis marked 'parallel', which TPU interpret mode runs in a "
                         "shuffled order" + ("" if right else "; in order its result is wrong too"),
                         variant="in-order", problem="hang", limit_s=on_wait.limit_s, interpret_params={},
                         right_in_order=bool(right))
    return r.finding("dma-protocol", f"TPU interpret mode hung with dma_execution_mode='on_wait'{within}: "
                     "a DMA wait that nothing satisfies (waited before it was started, on another slot or "
                     "semaphore than its start, or more waits than starts)", mode="on_wait", problem="hang",
                     limit_s=on_wait.limit_s)


def _modes(r: ProbeResults) -> Finding | None:
    ok_wait, ok_eager = r.passes(r.correctness.get("tpu-interpret")), r.passes(r.outcomes.get("dma-eager"))
    if ok_wait is None or ok_eager is None or ok_wait == ok_eager:
        return None
    good, bad = ("on_wait", "eager") if ok_wait else ("eager", "on_wait")
    when = {"on_wait": "their wait", "eager": "their start"}
    return r.finding("dma-protocol",
                     f"the result is right when DMAs complete at {when[good]} and wrong when they "
                     f"complete at {when[bad]}: a buffer is read before its DMA is waited on, or "
                     "refilled while in use",
                     variant="dma-eager", mode_passing=good, mode_failing=bad, problem="mode-dependent")


def _semaphores(r: ProbeResults) -> Finding | None:
    eager = r.outcomes.get("dma-eager")
    text = eager.captured if eager is not None else ""
    if SEMAPHORE_MARK not in text:
        return None
    lines = [ln for ln in text.splitlines() if SEMAPHORE_MARK in ln][:4]
    return r.finding("dma-protocol", "a semaphore was left non-zero when the kernel ended: "
                     "a DMA was started and never waited on", variant="dma-eager", report=lines,
                     problem="semaphore-left")


def judge_races(r: ProbeResults) -> list[Finding]:
    race = _race(r)
    found = [race] if race else []
    hang = _hang(r)
    if hang is not None:
        return found + [hang]
    modes = _modes(r)
    if modes is not None:
        found.append(modes)
    semaphores = None if found else _semaphores(r)
    return found + ([semaphores] if semaphores else [])


RACES = Probe(
    ProbeTerms("races", "Races and DMA protocol", "tpu-interpret",
               ("data-race", "dma-protocol", "grid-order-dependence")),
    plan_races, judge_races,
    note="TPU interpret mode's race detector on two cores, and both DMA execution modes: conflicting "
         "accesses, missing or misplaced DMA waits.",
    exposes=(Exposes("grid-order-dependence", "on two simulated cores", RACES_2CORES.name),
             Exposes("data-race", "with the race detector on"),
             Exposes("dma-protocol", "with DMAs completing when they start", "dma-eager")))
