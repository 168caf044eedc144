"""The grader's own process never imports JAX: checked in a fresh interpreter."""
import subprocess
import sys


def test_parent_modules_do_not_import_jax():
    code = ("import sys; import autograder.cli, autograder.grading.grade, autograder.feedback.render, "
            "autograder.feedback.results, autograder.grading.judge.scoring, autograder.gradescope.run, "
            "autograder.gradescope.build, autograder.grading.run.tracing, autograder.grading.run.execution, "
            "autograder.feedback.escaping, autograder.instructor.calibrate, "
            "autograder.pallas_surface.program.schema, autograder.pallas_surface.release; "
            "bad = [m for m in sys.modules if m == 'jax' or m.startswith('jax.')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
