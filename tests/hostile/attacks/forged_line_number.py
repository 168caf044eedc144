"""Forges the traced program's source table: a line number of 300,000,000,
which would make the grader's child build a 300 MB string to attach the line to
a traceback. The parent bounds every integer and source entry before anything
reaches the child, and refuses the document."""
import sys

from honest_add import honest_add as honest


def _forge():
    for name, module in list(sys.modules.items()):
        if name.endswith(("pallas_surface.serial", "pallas_surface.program.serial")) and hasattr(module, "Encoder"):
            enc = module.Encoder
            original = enc.source

            def source(self, info):
                index = original(self, info)
                for entry in self.sources:
                    entry[1] = 300_000_000
                return index
            enc.source = source


def add(x, y):
    _forge()
    return honest(x, y)
