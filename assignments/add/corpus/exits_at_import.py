"""Hostile-ish: calls sys.exit while being imported."""
import sys

sys.exit(0)


def add(x, y):
    return x + y
