"""An assignment's custom checks (``[checks]`` in its spec), run in the grader's child.

A check file holds ``unittest`` cases written with the decorators instructors
know from gradescope-utils (``weight``, ``number``, ``visibility``, ``tags``,
``partial_credit``, ``leaderboard``, ``hide_errors``). Each case subclasses
``KernelTestCase``; ``self.kernel(*arrays, rung=...)`` runs the submission's
kernel, rebuilt from its traced program (student code never runs in this
process, and nothing of the student's can read this file or its expected
values). The arrays must have the shapes and dtypes of one of the graded cases
(``self.signatures`` lists them).

gradescope-utils' own result class drops some outcomes without a trace: a test
with a failed ``subTest`` vanishes, a skipped test vanishes, an error in
``setUpClass``/``setUpModule`` crashes it, an unexpected success passes. Here
every test of the suite gets exactly one entry, and those cases say what
happened. Imports no JAX (the kernel function is handed in).
"""
from __future__ import annotations

import importlib.util
import sys
import traceback
import unittest
from pathlib import Path
from typing import Any, Callable

from gradescope_utils.autograder_utils.json_test_runner import JSONTestResult

MODULE_NAME = "assignment_checks"
MAX_OUTPUT = 8000            # per test; the parent caps again


class KernelError(AssertionError):
    """The submission's kernel raised, or was called with inputs no trace has.
    An AssertionError, so a check that calls a broken kernel fails (not errors)."""


class KernelTestCase(unittest.TestCase):
    """Base class of custom checks: gives ``self.kernel`` and ``self.signatures``."""

    _kernel: Callable[..., Any] | None = None
    signatures: tuple[tuple[tuple[tuple[int, ...], str], ...], ...] = ()
    rungs: tuple[str, ...] = ()
    # (the plan's signature number, rung) of the last kernel call: which graded test's
    # kernel a failed subTest ran, so the feedback can tie it to that test.
    last_call: tuple[int | None, str] | None = None

    def kernel(self, *arrays, rung: str | None = None):
        """The submission's output on ``arrays`` (numpy), on ``rung`` (default:
        the assignment's first rung). Raises KernelError when the kernel raised."""
        if KernelTestCase._kernel is None:
            raise RuntimeError("KernelTestCase.kernel is only available while the grader runs the checks")
        return KernelTestCase._kernel(arrays, rung or self.rungs[0])


def flatten(suite) -> list[unittest.TestCase]:
    out = []
    for item in suite:
        out += flatten(item) if isinstance(item, unittest.TestSuite) else [item]
    return out


def _method(test) -> Any:
    return getattr(test, getattr(test, "_testMethodName", ""), None)


class GradingResult(JSONTestResult):
    """gradescope-utils' result, plus what it drops (see the module's doc)."""

    def __init__(self, results: list, leaderboard: list):
        super().__init__(None, True, 0, results, leaderboard, "Test Failed: ")
        self.sub_failures: dict[str, list[str]] = {}
        self.setup_errors: list[str] = []
        self.entry_of: dict[str, dict] = {}

    def getDescription(self, test):
        doc = test.shortDescription()
        return doc or f"{type(test).__name__}.{test._testMethodName}"

    def processResult(self, test, err=None):
        before = len(self.results)
        super().processResult(test, err)
        if len(self.results) > before:
            self.entry_of[test.id()] = self.results[-1]

    def addError(self, test, err):
        if not hasattr(test, "_testMethodName"):
            # setUpClass, setUpModule, tearDownClass...: an _ErrorHolder, no test method.
            self.setup_errors.append(f"{test.description} raised {err[0].__name__}: {err[1]}")
            return
        super().addError(test, err)

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        call, KernelTestCase.last_call = KernelTestCase.last_call, None
        if err is not None:
            # Kept apart from the output: the feedback says a message repeated on another
            # rung once, and ties a failure to the graded test whose kernel it ran.
            what = "failed" if issubclass(err[0], test.failureException) else f"raised {err[0].__name__}"
            self.sub_failures.setdefault(test.id(), []).append(
                {"label": f"subTest {subtest._subDescription()} {what}", "message": str(err[1]),
                 "signature": call[0] if call else None, "rung": call[1] if call else None})

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        if not hasattr(test, "_testMethodName"):
            self.setup_errors.append(f"{test.description} skipped the class: {reason}")
            return
        self._failed_entry(test, f"Skipped: {reason}. A skipped check earns none of its points.")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._failed_entry(test, "Marked expectedFailure, but it passed.")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.processResult(test)

    def stopTest(self, test):
        failures = self.sub_failures.get(test.id())
        entry = self.entry_of.get(test.id())
        if failures and entry is None:
            self._failed_entry(test, "")
            entry = self.entry_of[test.id()]
        if failures:
            entry["subtests"] = failures
            entry["status"], entry["score"] = "failed", 0.0
        KernelTestCase.last_call = None
        super().stopTest(test)

    def _failed_entry(self, test, message: str) -> None:
        entry = self.buildResult(test, None)
        weight = self.getWeight(test)
        entry.update(status="failed", output=(entry.get("output", "") + "\n" + message).strip())
        if weight is not None:
            entry.update(score=0.0, max_score=weight)
        self.results.append(entry)
        self.entry_of[test.id()] = entry


def planned(suite_tests: list[unittest.TestCase]) -> list[dict]:
    """Every test of the suite: name, number, weight, visibility (sent first, so
    a suite that runs out of time still lists what it did not finish)."""
    out = []
    for test in suite_tests:
        fn = _method(test)
        doc = test.shortDescription()
        out.append({"id": test.id(), "name": doc or f"{type(test).__name__}.{test._testMethodName}",
                    "number": str(getattr(fn, "__number__", "") or ""),
                    "weight": getattr(fn, "__weight__", None),
                    "visibility": getattr(fn, "__visibility__", None) or "visible",
                    "leaderboard": getattr(fn, "__leaderboard_column__", None) is not None})
    return out


def load(folder: Path, file: str) -> unittest.TestSuite:
    """The check file's tests, imported from ``folder`` (its helpers may import
    each other and the assignment's reference)."""
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, folder / file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module
    spec.loader.exec_module(module)
    return unittest.defaultTestLoader.loadTestsFromModule(module)


def run(suite: unittest.TestSuite, tests: list[unittest.TestCase]) -> tuple[list[dict], list[dict]]:
    """(test entries, leaderboard entries); a test that never ran (a setUpClass
    error) gets a failed entry that says why."""
    results: list[dict] = []
    leaderboard: list[dict] = []
    result = GradingResult(results, leaderboard)
    result.buffer = True
    result.startTestRun()
    try:
        suite(result)
    finally:
        result.stopTestRun()
    why = "; ".join(result.setup_errors) or "it did not run"
    for test in tests:
        if test.id() not in result.entry_of and getattr(_method(test), "__leaderboard_column__", None) is None:
            result._failed_entry(test, f"Not run: {why}")
    for entry in results:
        entry["output"] = entry.get("output", "")[-MAX_OUTPUT:]
        for sub in entry.get("subtests", ()):
            sub["message"] = sub["message"][-MAX_OUTPUT:]
    return results, leaderboard


def error_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()[:2000]


def main(argv: list[str]) -> int:
    """``python -m autograder.children.check_suite FOLDER FILE``: the planned tests as JSON
    (``check`` and ``build`` load a check file this way, away from their own process)."""
    import json
    suite = load(Path(argv[0]), argv[1])
    print(json.dumps(planned(flatten(suite))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
