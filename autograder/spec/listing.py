"""The `list` verb: the assignments found where assignments are looked for."""
from __future__ import annotations

import argparse
import sys

from . import ENV, available, search_path


def add_arguments(p: argparse.ArgumentParser) -> None:
    """No arguments of its own (``--assignments`` is every verb's)."""


def run(args: argparse.Namespace) -> int:
    slugs = available(args.assignments)
    for slug in slugs:
        print(slug)
    if not slugs:
        where = ", ".join(str(p) for p in search_path(args.assignments))
        print(f"pallas-autograder: no assignments found (looked in {where}); give --assignments DIR "
              f"or set {ENV}", file=sys.stderr)
    return 0 if slugs else 1
