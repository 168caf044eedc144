"""Copy-pasteable local reproductions of one test (plain text; imports no JAX).

Only for visible cases: a hidden case's shapes and seed are never shown.
"""
from __future__ import annotations

import math
import os
import shlex
import shutil
from dataclasses import dataclass

from ..findings import Finding
from ..grading.run import inputs
from ..pallas_surface.release import TARGET_DEVICE_KIND
from ..spec import Assignment, Case


def interpret_source(rung: str, params: dict | None = None) -> str:
    """The Python expression for a rung's interpreter parameters."""
    if rung == "generic":
        return "True"
    args = ", ".join(f"{k}={v!r}" for k, v in sorted((params or {}).items()))
    return f"pltpu.InterpretParams({args})"


@dataclass(frozen=True)
class Invocation:
    """How the student starts the grader where they are, so the reproduce command
    works pasted there: the program, the file as they named it, and the
    assignments folder they gave (if any)."""
    program: str                      # "python -m autograder", "pallas-autograder", ".venv/bin/pallas-autograder"
    submission: str | None = None     # None: the uploaded file's name (Gradescope: the student's own copy)
    assignments: str | None = None    # --assignments DIR, as given

    def command(self, assignment: Assignment, replay: Replay, uploaded_as: str | None,
                run_key: int | None = None) -> str:
        target = self.submission or shlex.quote(uploaded_as or assignment.entry_file)
        folder = f" --assignments {shlex.quote(self.assignments)}" if self.assignments else ""
        key = f" --run-key {run_key}" if run_key is not None else ""
        cases = "".join(f" --case {shlex.quote(c.name)}" for c in replay.cases)
        rungs = "".join(f" --rung {r}" for r in replay.rungs)
        return f"{self.program} grade {target} -a {assignment.slug}{folder}{cases}{rungs}{key}"


@dataclass(frozen=True)
class Replay:
    """What one test's reproduce command replays: the test's own case on its own
    rung; and where the whole grading tied the test to its problem by evidence
    from elsewhere (a check's runs, which compare with the case's other rungs;
    another case's verdict), that evidence too: so the replay finds the same
    finding, explained under the same test, with the same fix. Never a secret case."""
    cases: tuple[Case, ...]           # visible cases only, in the spec's order
    rungs: tuple[str, ...]            # (): every rung


def replay_of(assignment: Assignment, case: Case, rung: str, finding: Finding | None) -> Replay | None:
    """The replay of the visible correctness test (``case``, ``rung``) whose primary
    finding is ``finding``; None when the evidence that tied it is a secret case's
    (no command may name that case, and a replay without it shows another finding)."""
    if finding is None or finding.case is None:   # passed, or submission-wide: any run shows it
        return Replay((case,), (rung,))
    names, every = {case.name}, False
    if finding.check != "correctness":
        # A check's finding, from this case or another (``scoring._may_explain``): that
        # case's runs of the check; a check that runs the kernel compares with the case's
        # test runs (poisoning with TPU interpret mode's, grid order with the generic one's).
        if not _visible(assignment, finding.case):
            return None
        names.add(finding.case)
        every = finding.rung != "static"
    facts = finding.facts()
    # A verdict that reads another case (named only when visible): the logic error another
    # case shows, on any rung (``causes.one_cause``); the smaller inputs it gets right on
    # this rung (``diagnosis.overflows``).
    for key, all_rungs in (("far_case", True), ("right_on", False)):
        name = facts.get(key)
        if isinstance(name, str) and _visible(assignment, name):
            names.add(name)
            every = every or all_rungs
    return Replay(tuple(c for c in assignment.cases if c.name in names), () if every else (rung,))


def _visible(assignment: Assignment, name: str | None) -> bool:
    return any(c.name == name and c.visible for c in assignment.cases)


# What the handout kit runs (its README and notebook say so, in the kit's folder):
# the command a student reading Gradescope's feedback pastes there.
KIT = Invocation("python -m autograder")


def invoked(argv0: str, executable: str, submission: str, assignments: str | None = None) -> Invocation:
    """The invocation of this process: ``python -m autograder`` (the kit, or any
    install) names the interpreter, ``pallas-autograder`` the script, each by
    the bare name where PATH finds this very program, else by its path."""
    if os.path.basename(argv0) == "__main__.py":
        program = f"{_named(executable, ('python', 'python3'))} -m autograder"
    else:
        program = _named(argv0, ("pallas-autograder",))
    return Invocation(program, shlex.quote(submission), assignments)


def _named(path: str, names: tuple[str, ...]) -> str:
    here = os.path.abspath(path)
    for name in names:
        found = shutil.which(name)
        if found and os.path.abspath(found) == here:
            return name
    relative = os.path.relpath(here)
    return shlex.quote(relative if not relative.startswith("..") else here)


def command(assignment: Assignment, case: Case, rung: str, uploaded_as: str | None,
            run_key: int | None = None, how: Invocation = KIT) -> str:
    """The command that replays test (``case``, ``rung``) alone."""
    return how.command(assignment, Replay((case,), (rung,)), uploaded_as, run_key)


def _atol(assignment: Assignment, case: Case, tol=None) -> float:
    """The absolute tolerance the grader compares with (``compare.compare``)."""
    tol = tol or assignment.tolerance(case)
    return float(f"{tol.atol * math.sqrt(max(assignment.reduction_length(case), 1)):.6g}")


def snippet(assignment: Assignment, case: Case, rung: str, params: dict | None = None,
            seed: list[int] | None = None, tolerance=None, hung_s: float | None = None) -> str:
    """``tolerance``: the one the grader used, when not the case dtype's (a stress input's own);
    ``hung_s``: the grader's limit this run hung past (the snippet says to expect it)."""
    tol = tolerance or assignment.tolerance(case)
    module = assignment.entry_file[:-3]
    fn = assignment.entry_function
    names = [i.name for i in assignment.inputs]
    lines = [
        f"# Case {case.name!r} on the {rung} rung. Run beside your {assignment.entry_file}.",
        "import numpy as np",
        "import jax.numpy as jnp",
        *(["from jax.experimental.pallas import tpu as pltpu"] if rung != "generic" else []),
        f"from {module} import {fn}",
        "",
        *inputs.generator_source(assignment, case, seed),
        "",
    ]
    call = f"{fn}({', '.join(names)})"
    if hung_s is not None:
        lines += [f"# In the grader this run hung (no result within {hung_s:g} s): expect it to hang here",
                  "# too, and stop it with Ctrl-C."]
    if rung == "generic":
        lines += ["# The generic interpreter: keep interpret=True in your pallas_call.",
                  f"out = np.asarray({call}, dtype=np.float64)"]
    else:
        lines += [f"with pltpu.force_tpu_interpret_mode({interpret_source(rung, params)}):",
                  f"    out = np.asarray({call}, dtype=np.float64)",
                  "pltpu.reset_tpu_interpret_mode_state()  # needed after an exception"]
        if (params or {}).get("detect_races"):
            # A race can leave every value right: its report, not the comparison, shows it.
            lines += ["# A race prints the detector's report (starting 'RACE DETECTED') while the kernel",
                      "# runs, even when every value compared below is right."]
    arrays = [i.name for i in assignment.inputs if i.kind == "array"]
    if assignment.snippet_reference:
        lines += [f"{', '.join(arrays)} = "
                  f"{', '.join(f'np.asarray({a}, dtype=np.float64)' for a in arrays)}",
                  f"expected = {assignment.snippet_reference}",
                  "# the grader's tolerance for this case:",
                  f"allowed = {_atol(assignment, case, tol)!r} + {tol.rtol!r} * np.abs(expected)",
                  "err = np.abs(out - expected)",
                  'print("wrong elements:", int((~(err <= allowed)).sum()), "of", err.size,',
                  '      "first at:", np.argwhere(~(err <= allowed))[:1].tolist(),',
                  '      "max abs error:", np.nanmax(err), "NaNs:", int(np.isnan(out).sum()))']
    return "\n".join(lines)


def lowering_snippet(assignment: Assignment, case: Case, seed: list[int] | None = None) -> str:
    """What the compile check does, on the student's machine: lower for a TPU on a
    CPU, under an abstract TPU mesh (public API) so the lowering asks a TPU's
    rules, not the CPU's. Running an interpreter would not reproduce a refusal."""
    module = assignment.entry_file[:-3]
    fn = assignment.entry_function
    names = [i.name for i in assignment.inputs]
    return "\n".join([
        f"# Case {case.name!r}: lower your kernel for a TPU on this CPU, as the grader's compile check does.",
        "# Set interpret=False in your pallas_call first: the interpreters have no compiler.",
        "import numpy as np",
        "import jax",
        "import jax.numpy as jnp",
        "from jax.sharding import AbstractDevice, AbstractMesh, AxisType, use_abstract_mesh",
        f"from {module} import {fn}",
        "",
        *inputs.generator_source(assignment, case, seed),
        "",
        f"chip = AbstractDevice(device_kind={TARGET_DEVICE_KIND!r}, num_cores=1, platform=\"tpu\")",
        "with use_abstract_mesh(AbstractMesh((1,), (\"x\",), axis_types=(AxisType.Auto,), abstract_device=chip)):",
        f"    jax.jit({fn}).trace({', '.join(names)}).lower(lowering_platforms=(\"tpu\",))  "
        "# raises what the check quoted",
    ])
