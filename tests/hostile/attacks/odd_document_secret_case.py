"""An honest kernel whose traced program, at the secret case's size only, is
forged into a document every name of which is on the allow-list but whose
structure is odd: an equation's output is {"w": ...} instead of a variable.
It once passed the schema and crashed the parent's canonical form ("Autograder
error", secret cases only). The schema now checks the document's structure,
and the parent's analyses of a document are guarded: the forged program is
refused at that case (which then earns nothing), and the grading completes."""
import sys

from honest_add import honest_add as honest


def _forge():
    for name, module in list(sys.modules.items()):
        if name.endswith(("pallas_surface.serial", "pallas_surface.program.serial")) and hasattr(module, "encode") and \
                not getattr(module.encode, "forged", False):
            original = module.encode

            def encode(traced, student_files):
                doc = original(traced, student_files)
                rows = traced.closed.jaxpr.invars[0].aval.shape[0]
                if rows not in (16, 4096):          # neither the visible case nor the production size
                    eqn = doc["program"]["jaxpr"]["eqns"][-1]
                    eqn["out"].append({"w": 0, "aval": eqn["out"][0]["aval"]})
                return doc
            encode.forged = True
            module.encode = encode


def add(x, y):
    _forge()
    return honest(x, y)
