"""An honest kernel whose traced program, at the secret case's size and at the
speed (and production) size, says the integer 7 where one BlockMapping's
array_aval (the operand's shape) belongs. The grammar checks a document's
structure, not what each field of each class holds, so it passes; it once
reached numbers._block_counts through faces.of in the parent, outside the
guard of the canonical form, and ended the grading in an "Autograder error"
(0/0). Every parent reader of a document now runs under one guard
(grading/identity/readers.py) and reads fields by their type; the grader's
child refuses to rebuild it. The forged sizes' checks earn nothing; the
grading completes."""
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
                if rows != 16:          # every size but the visible case's
                    for eqn in doc["program"]["jaxpr"]["eqns"]:
                        for key, value in eqn["params"]:
                            if key == "grid_mapping":
                                fields = value["dc"][1]
                                mappings = next(v for k, v in fields if k == "block_mappings")["t"]
                                for pair in mappings[0]["dc"][1]:
                                    if pair[0] == "array_aval":
                                        pair[1] = 7
                return doc
            encode.forged = True
            module.encode = encode


def add(x, y):
    _forge()
    return honest(x, y)
