"""What a finding's evidence says for the feedback, read from its facts and the
kernel's (``grading.identity.sources``); plain data, no JAX.

Where: the line of the student's file that holds the fault (``fault``): the
``grid=`` of a grid one step too long, the index map that asks for a block past
the end, the ``dimension_semantics`` that marks a reduction parallel, the store
that leaves a row out, the lines the race detector names, the work done outside
the kernel, the line an endless loop was running. None when the evidence does
not point at one line (the feedback then names the call or the kernel's lines).

Which fix (``fix``): the key of its kind's ``seen`` entry in the catalogue, and
the values that fill it. A row a mask leaves out (the fill comes back as it
was) is not an accumulator to zero; two cores of a ``pl.kernel`` mesh writing
one range is not a parallel grid axis; a DMA that is wrong only when copies
complete early is a buffer refilled too soon; a wait on another semaphore than
its copy's start (read from the traced kernel: ``KernelSource.sem_mismatches``) is
that wait's fault and fix, whatever the run showed. None when the evidence does not
say (the catalogue's general line stands). The wording is the catalogue's; this
module only chooses.
"""
from .formula import FORMULA_FACTS
from .where import Fault, crossed, fault, grid_too_long, oob_axis, padded_reads, reset_axis, unread, with_grid
from .which import SECRET_SAFE, fix, reads_fix, seen

__all__ = ["FORMULA_FACTS", "SECRET_SAFE", "Fault", "crossed", "fault", "fix", "grid_too_long", "oob_axis",
           "padded_reads", "reads_fix", "reset_axis", "seen", "unread", "with_grid"]
