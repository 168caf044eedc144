"""The `new` verb: a new assignment's files, ready to edit and `check`.

assignments/<slug>/spec.toml            every top-level key present, each commented
assignments/<slug>/reference.py         the float64 numpy reference
assignments/<slug>/README.md            the student handout
assignments/<slug>/checks.py            custom checks (unittest, gradescope-utils decorators)
assignments/<slug>/corpus/              known-wrong submissions and expectations.toml
solutions/<slug>.py                     the instructor solution, regions marked for the starter

The template is an element-wise unary assignment (out = f(x)) whose reference,
solution and corpus agree, so `check` passes before the instructor edits
anything; `--like EXISTING` starts from another assignment's spec instead.
Nothing is ever overwritten.
"""
from __future__ import annotations

import importlib.util
import keyword
import re
import shutil
import sys
import tomllib
from pathlib import Path

from ..spec import SpecError, load, search_path

SPEC = '''# The assignment's spec: docs/spec-reference.md lists every key with its rule.
title = "{title}"                  # shown at the top of the feedback
entry_file = "{slug}.py"           # the file students upload
entry_function = "{slug}"          # the function the grader calls
reference = "reference.py:{slug}"  # float64 numpy reference, in this folder
snippet_reference = "np.maximum(x, 0.0)"  # the same, as a numpy expression in the inputs' names
numerics_hint = "Compute in float32 and cast once when writing the output."
rungs = ["generic", "tpu-interpret"]   # the interpreters every case runs on
probe_cases = ["small"]            # the cases the probes run on (default: every visible case)
stdout_visibility = "hidden"       # Gradescope's visibility of what the grader prints

# Named dimensions and what every case's sizes must satisfy.
[dims.M]
multiple_of = 8
[dims.N]
multiple_of = 128

[[inputs]]
name = "x"
shape = ["M", "N"]
dtype = "float32"
distribution = "normal"            # normal or uniform; random data, never periodic

[output]
shape = ["M", "N"]
dtype = "float32"

# Per dtype: an element passes when |out - ref| <= atol + rtol * |ref|.
[tolerance.float32]
rtol = 1e-6
atol = 1e-6

[limits]
startup_s = 120                    # importing JAX and the submission
case_s = 50                        # one run's ceiling (calibrate derives tighter limits)
memory_mb = 600                    # the student's process
total_s = 540                      # the whole grading (Gradescope's timeout minus a margin)

# Cases: at least 2 blocks on each grid axis for the solution's (8, 128) tiling.
[[cases]]
name = "small"
dims = {{ M = 16, N = 256 }}
seed = 1
points = 2

[[cases]]
name = "odd-rows"
dims = {{ M = 24, N = 384 }}
seed = 2
points = 2

# A secret case: a visible test on Gradescope, its data never shown.
[[cases]]
name = "hidden-wide"
dims = {{ M = 40, N = 640 }}
seed = 3
points = 3
secret = true

# Probe checks: one Gradescope test each; a bug is charged once.
[probes.index-maps]
points = 1
[probes.compile]
points = 1
[probes.structure]
points = 1
gates = ["correctness"]            # no correctness points for work done outside a kernel
[probes.poisoning]
points = 1
[probes.grid-order]
points = 1
[probes.races]
points = 1

# Custom checks: unittest cases written with gradescope-utils' decorators, run against the
# kernel the grader rebuilt, in a process that never ran student code (docs/guides/instructors.md).
# Gradescope only: the student kit leaves them out (they hold expected values). Delete to drop.
[checks]
file = "checks.py"
limit_s = 120                      # the whole suite's wall clock

# Speed: the kernel's estimated TPU time at this size in every grading (0 points: shown,
# not scored; `calibrate` records the solution's for comparison), and the size the
# `speed` verb times passing kernels at on a real TPU (docs/guides/tpu.md).
[speed]
chip = "v5e"
points = 0                         # the estimate's points, on the curve against the solution
tpu_points = 0                     # the TPU timing's points (merged after `speed`)
[[speed.sizes]]
name = "large"
dims = {{ M = 4096, N = 4096 }}
dtype = "float32"
'''

CHECKS = '''"""Custom checks for `{slug}`: unittest cases with gradescope-utils' decorators.

Each runs on Gradescope against the student's kernel as the grader rebuilt it
(student code never runs here). ``self.kernel(*arrays, rung=...)`` takes arrays
with the shapes and dtypes of a graded case (``self.signatures``) and returns
the kernel's output; it raises KernelError (a failure) when the kernel raised.
"""
import numpy as np
from gradescope_utils.autograder_utils.decorators import number, weight

from autograder import KernelTestCase


class {check_class}(KernelTestCase):
    @weight(1)
    @number("C1")
    def test_negative_inputs_give_zeros(self):
        """All-negative input gives all zeros, on both interpreters"""
        shape, dtype = self.signatures[0][0]
        x = (-1.0 - np.abs(np.random.default_rng(0).standard_normal(shape))).astype(dtype)
        for rung in self.rungs:
            with self.subTest(rung=rung):
                np.testing.assert_array_equal(self.kernel(x, rung=rung), 0.0)
'''

REFERENCE = '''"""Reference for `{slug}`: float64 numpy, run by the grader (never by the student's process)."""
import numpy as np


def {slug}(x: np.ndarray) -> np.ndarray:
    return np.maximum(x.astype(np.float64), 0.0)
'''

README = '''# {title}

Write `{slug}(x)` in `{slug}.py`: x is a float32 array of shape (M, N) with
M % 8 == 0 and N % 128 == 0. Return max(x, 0) as float32, computed by a
`pallas_call` over a grid of blocks.

Grading: every case runs on the generic interpreter (`interpret=True`) and in
TPU interpret mode (`pltpu.InterpretParams`); probe checks look for
out-of-bounds blocks, uninitialized memory, grid-order dependence and races.
Correctness points count only for work done inside the kernel.
'''

SOLUTION = '''# BEGIN SOLUTION
"""Instructor solution for `{slug}`: one (8, 128) block per grid point."""
# STUB: """Starter for `{slug}`: write the kernel and the pallas_call (see README.md)."""
# END SOLUTION
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

# BEGIN SOLUTION
BLOCK = (8, 128)
# END SOLUTION


def {slug}_kernel(x_ref, o_ref):
    # BEGIN SOLUTION
    o_ref[...] = jnp.maximum(x_ref[...], 0.0)
    # STUB: # TODO: write this block of the output.
    # STUB: raise NotImplementedError
    # END SOLUTION


def {slug}(x):
    # BEGIN SOLUTION
    m, n = x.shape
    spec = pl.BlockSpec(BLOCK, lambda i, j: (i, j))
    return pl.pallas_call(
        {slug}_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(m // BLOCK[0], n // BLOCK[1]),
        in_specs=[spec],
        out_specs=spec,
        interpret=True,  # on a CPU; the grader picks the interpreter itself
    )(x)
    # STUB: # TODO: choose a block shape, a grid and BlockSpecs.
    # STUB: raise NotImplementedError
    # END SOLUTION
'''

WRONG = '''"""Bug: the grid is one block too long along N: the generic interpreter clamps
the extra block (right-looking numbers), TPU interpret mode raises."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def {slug}(x):
    m, n = x.shape
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))

    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.maximum(x_ref[...], 0.0)

    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(m // 8, n // 128 + 1), in_specs=[spec], out_specs=spec,
                          interpret=True)(x)
'''

EXPECTATIONS = '''# `pallas-autograder check {slug}` grades each file and requires the finding ID
# given here ("clean": full marks, no finding). Add one file per bug the
# assignment claims to catch, and one per correct style it must not charge.
[files]
"grid_one_step_too_long.py" = "out-of-bounds"
'''


class ScaffoldError(RuntimeError):
    """`new` cannot write: says what exists or what is wrong."""


def _shadows(slug: str) -> bool:
    """A standard or installed module of that name (the grader imports jax, numpy, ...);
    a file of the instructor's own in the current folder does not count."""
    if slug in sys.stdlib_module_names:
        return True
    found = importlib.util.find_spec(slug)
    origin = getattr(found, "origin", None) or ""
    mine = origin.startswith(str(Path.cwd())) and "site-packages" not in origin and \
        not origin.startswith(str(Path(__file__).resolve().parents[1]))
    return found is not None and not mine


def _title(slug: str) -> str:
    return slug.replace("_", " ").capitalize() + " with a grid of blocks"


def new(slug: str, assignments: Path, like: str | None = None) -> list[Path]:
    if not re.fullmatch(r"[a-z][a-z0-9_]*", slug) or keyword.iskeyword(slug):
        raise ScaffoldError(f"the slug must be a lowercase Python identifier, not a keyword (it names "
                            f"the file and the function); got {slug!r}")
    if _shadows(slug):
        raise ScaffoldError(f"the slug {slug!r} is an importable module here: a student's {slug}.py "
                            "would shadow it; choose another name")
    folder = assignments / slug
    solution = assignments.resolve().parent / "solutions" / f"{slug}.py"
    for path in (folder, solution):
        if path.exists():
            raise ScaffoldError(f"{path} already exists: new never overwrites")
    source = _source(like, assignments) if like is not None else None
    values = {"slug": slug, "title": _title(slug),
              "check_class": "".join(w.capitalize() for w in slug.split("_")) + "Checks"}
    files = {folder / "reference.py": REFERENCE, folder / "README.md": README,
             folder / "corpus" / "expectations.toml": EXPECTATIONS,
             folder / "corpus" / "grid_one_step_too_long.py": WRONG, solution: SOLUTION}
    if like is None:
        files[folder / "spec.toml"] = SPEC
        files[folder / "checks.py"] = CHECKS
    made = []
    try:
        for path, template in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(template.format(**values), encoding="utf-8")
            made.append(path)
        if source is not None:
            made.append(_like(source, folder, slug))
        a = load(folder)
        if (a.entry_function, a.reference) != (slug, f"reference.py:{slug}"):
            raise ScaffoldError(f"--like: the spec of {source.name} names its entry or reference in a form "
                                "new cannot rewrite; edit entry_file, entry_function and reference by hand")
    except (SpecError, ScaffoldError) as e:
        # Nothing half-made is left behind: a second try would find it and refuse.
        shutil.rmtree(folder, ignore_errors=True)
        solution.unlink(missing_ok=True)
        raise ScaffoldError(f"the new spec does not load: {e}" if isinstance(e, SpecError) else str(e)) from None
    return made


def _source(like: str, assignments: Path) -> Path:
    """The --like assignment's folder: beside the new one, else wherever `grade` finds it."""
    for root in [assignments, *search_path()]:
        if (root / like / "spec.toml").is_file():
            return root / like
    raise ScaffoldError(f"--like: no assignment {like!r} in {assignments} or {', '.join(map(str, search_path()))}")


def _like(source: Path, folder: Path, slug: str) -> Path:
    """The other assignment's spec with this one's entry and reference, and its reference copied."""
    text = (source / "spec.toml").read_text(encoding="utf-8")
    old = source.name
    text = re.sub(r'(?m)^entry_file = ".*"', f'entry_file = "{slug}.py"', text)
    text = re.sub(r'(?m)^entry_function = ".*"', f'entry_function = "{slug}"', text)
    text = re.sub(r'(?m)^title = ".*"', f'title = "{_title(slug)} (from {old})"', text)
    ref_file = re.search(r'(?m)^reference = "([^":]+):', text)
    if ref_file and (source / ref_file.group(1)).is_file():
        body = (source / ref_file.group(1)).read_text(encoding="utf-8")
        (folder / "reference.py").write_text(body.replace(f"def {old}(", f"def {slug}("), encoding="utf-8")
    text = re.sub(r'(?m)^reference = ".*"', f'reference = "reference.py:{slug}"', text)
    if (source / "README.md").is_file():
        readme = (source / "README.md").read_text(encoding="utf-8")
        (folder / "README.md").write_text(re.sub(rf"\b{re.escape(old)}\b", slug, readme), encoding="utf-8")
    checks = tomllib.loads(text).get("checks")
    if isinstance(checks, dict) and (source / checks.get("file", "checks.py")).is_file():
        name = checks.get("file", "checks.py")
        (folder / name).write_text((source / name).read_text(encoding="utf-8"), encoding="utf-8")
    out = folder / "spec.toml"
    out.write_text(text, encoding="utf-8")
    return out


def add_arguments(p) -> None:
    p.add_argument("slug", help="a Python identifier: the folder, entry file and function name")
    p.add_argument("--like", help="copy this existing assignment's spec instead of the template")


def run(args) -> int:
    try:
        made = new(args.slug, args.assignments or Path("assignments"), args.like)
    except ScaffoldError as e:
        args.parser.exit(1, f"pallas-autograder new: {e}\n")
    print("wrote " + ", ".join(str(p) for p in made))
    return 0
