"""The student notebook (Jupyter or Colab), written and validated with nbformat.

Cells, in order: the handout; install (the grader's exact jax/jaxlib: Colab
ships another version); imports; the kernel, saved as the file students
upload; a run on the generic interpreter; a run in TPU interpret mode with race
detection; a reset (TPU interpret mode keeps its simulated memory after an
exception, on purpose); the local grader; the kernel on a real TPU where the notebook runs on one (the
student's own check, never the grade). The two runs are the grader's own
reproduction snippet on the first case, so what they print is what the
feedback's snippets print.
"""
from __future__ import annotations

from ..feedback import repro
from ..pallas_surface import release
from ..spec import Assignment

KERNEL_CELL_TAG = "kernel"     # the test fills this cell with the solution


def _nbformat():
    try:
        import nbformat
    except ImportError:
        raise RuntimeError("writing the notebook needs nbformat (the [instructor] extra): run ./setup.sh in "
                           "your pallas-autograder checkout, or `.venv/bin/pip install '.[instructor]'` there") \
            from None
    return nbformat


def _run_cell(assignment: Assignment, rung: str, params: dict) -> str:
    case = assignment.cases[0]
    module = assignment.entry_file[:-3]
    text = repro.snippet(assignment, case, rung, params, [case.seed])
    # Reload the module each time: the kernel cell rewrites the file.
    return f"import importlib, {module}\nimportlib.reload({module})\n" + text


def build(assignment: Assignment, readme: str, starter: str):
    """The notebook as an nbformat NotebookNode (validated)."""
    nbf = _nbformat()
    v4 = nbf.v4
    slug, entry = assignment.slug, assignment.entry_file
    course = release.facts(assignment.jax)
    kernel = v4.new_code_cell(f"%%writefile {entry}\n{starter}")
    kernel.metadata["tags"] = [KERNEL_CELL_TAG]
    cells = [
        v4.new_markdown_cell(readme),
        v4.new_markdown_cell("## Setup\nThe grader uses exactly this JAX. Colab ships another version: "
                             "install this one, then restart the runtime once if it says so."),
        v4.new_code_cell(f'%pip install -q "jax=={assignment.jax}" "jaxlib=={assignment.jax}" numpy jinja2'),
        v4.new_code_cell("import numpy as np\nimport jax\nimport jax.numpy as jnp\n"
                         "from jax.experimental import pallas as pl\n"
                         "from jax.experimental.pallas import tpu as pltpu\n"
                         f"assert jax.__version__ == {assignment.jax!r}, jax.__version__"),
        v4.new_markdown_cell(f"## Your kernel\nEdit `{assignment.entry_function}` below and run the cell: "
                             f"it is saved as `{entry}`, the file you upload to Gradescope."),
        kernel,
        v4.new_markdown_cell("## Run it on the generic interpreter (`interpret=True`)\nFast, but it clamps "
                             "out-of-bounds blocks and ignores DMA timing and grid order."),
        v4.new_code_cell(_run_cell(assignment, "generic", {})),
        v4.new_markdown_cell("## Run it in TPU interpret mode, with race detection\nSimulated HBM, VMEM, DMAs "
                             "and semaphores: it raises on out-of-bounds reads, and with "
                             f"`{course.RACE_SWITCH}` it {course.RACE_BEHAVIOUR} when two accesses conflict."),
        v4.new_code_cell(_run_cell(assignment, "tpu-interpret", {"detect_races": True, **course.RACE_PARAMS})),
        v4.new_markdown_cell("## Reset after an error\nTPU interpret mode keeps its simulated memory after "
                             "an exception, on purpose (so you can inspect it). Run this before trying again."),
        v4.new_code_cell("pltpu.reset_tpu_interpret_mode_state()"),
        v4.new_markdown_cell("## Grade it locally\nThe same grader and feedback as Gradescope, on the "
                             "visible cases. Needs the handout folder (its `autograder/` and "
                             "`assignments/`) beside this notebook: on Colab, upload and unzip it first."),
        v4.new_code_cell(
            "import pathlib, subprocess, sys\n"
            "if pathlib.Path('autograder').is_dir() and pathlib.Path('assignments').is_dir():\n"
            f"    proc = subprocess.run([sys.executable, '-m', 'autograder', 'grade', {entry!r}, '-a', {slug!r}],\n"
            "                          capture_output=True, text=True)\n"
            "    print(proc.stdout[-6000:] or proc.stderr[-3000:])\n"
            "else:\n"
            "    print('Upload and unzip the handout folder to grade here.')"),
        v4.new_markdown_cell("## On a real TPU: your own check, not the grade\nThe grader never needs a TPU. "
                             "Where this notebook runs on one (Colab: Runtime > Change runtime type > a TPU), "
                             "this cell compiles your kernel with the TPU compiler and runs it at the visible "
                             "cases: refused (and the compiler's words), right, or wrong there. It changes "
                             "nothing in your grade."),
        v4.new_code_cell(
            "import pathlib\n"
            "if pathlib.Path('autograder').is_dir() and pathlib.Path('assignments').is_dir():\n"
            "    from autograder.tpu import onchip\n"
            f"    print(onchip.check(pathlib.Path({entry!r}), {slug!r}, pathlib.Path('assignments')))\n"
            "else:\n"
            "    print('Upload and unzip the handout folder first.')"),
    ]
    nb = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "colab": {"provenance": []},
    })
    nbf.validate(nb)
    return nb


def write(nb, path) -> None:
    _nbformat().write(nb, str(path))
