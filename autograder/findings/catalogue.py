"""The finding catalogue: every finding ID's one home (pure data; imports nothing
else from the package).

A kind holds all the grader says of a class of bug, whoever says it: its title
and summary, its one-line fix (and finer fixes by a fact of the finding), and
its explanation template beside this module (``templates/<id>.j2``). Every other
table that speaks of finding IDs reads its entry here, or is tested against it
(tests/test_catalogue.py). IDs are a public contract: they appear in
results.json tags, in the templates and in the README, so they never change
once published.

Adding a finding: one ``FindingKind`` below (how it is detected included), its place
in ``PRECEDENCE``, and ``templates/<id>.j2``; then the check that detects it.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from .kind import CHIP_SOURCE, RUNGS, TEMPLATES, TEST_RUNGS, Claim, FindingKind

__all__ = ["CATALOGUE", "CHIP_SOURCE", "PRECEDENCE", "RUNGS", "TEMPLATES", "TEST_RUNGS", "Claim",
           "FindingKind"]

# One length from the wrong dimension: past the end on one case, short of it on another.
WRONG_DIMENSION = ("{expr} is dimension {dim} ({wrong}), but what it counts runs along dimension {axis} ({right}): "
                   "past the end where dimension {dim} is the larger, short where it is the smaller; take it from "
                   "dimension {axis}{fixed}")


_KINDS = (
    FindingKind(
        "submission-error", "Submission cannot be graded",
        "missing file or function, syntax/import error, exception, wrong output "
        "shape/dtype/type, timeout, memory limit",
        detected_by="correctness runs",
        fix="make the file import and run on its own (see the details)",
        fixes={
            "file-missing": "upload the file with the name the handout gives",
            "syntax-error": "run the file locally and correct the line shown",
            "import-error": "make the file import on its own, without files you did not upload",
            "function-missing": "define the function the handout names, at the top level of the file",
            "wrong-arity": "give the function exactly the handout's arguments",
            "not-implemented": "replace the starter's raise NotImplementedError with your kernel",
            "exception": "run the case locally (see the reproduction) and fix the error shown",
            "timeout": "look for a loop that never ends or a DMA wait that nothing starts",
            "import-timeout": "remove slow work done at import time",
            "memory-limit": "avoid huge intermediate arrays",
            "wrong-shape": "return the pallas_call's output with the handout's shape",
            "wrong-dtype": "set out_shape's dtype as the handout says",
            "wrong-type": "return one array, not a tuple or a NumPy value",
            "killed": "do not call exit() or os._exit()",
            "exit-at-import": "do not call exit() or os._exit()",
            "unsupported": "rewrite the line the details name with the call they suggest",
        },
        seen={
            "trace-hang": "the Python around your kernel never returned: make the loop it was running when it "
                          "was stopped end",
            "trace-stuck": "the Python around your kernel never returned: look for a loop that never ends",
            "run-hang": "the kernel never finished: look for a loop in it that never ends, or a DMA wait that "
                        "nothing starts",
        },
        chip="nothing reaches the chip until the submission loads and traces"),
    FindingKind(
        "wrong-result", "Wrong result",
        "wrong on every rung alike: a logic error; the arithmetic on the interpreters "
        "is real, so it is wrong on a chip too",
        detected_by="correctness runs; numerics probe (wrong only on stress inputs)",
        fix="compare your kernel's formula with the handout's on the smallest case",
        fixes={"failed-check": "make what your failing check guards hold: its line and message are in the "
                               "test's details"},     # (a pl.debug_check of the student's failed)
        fix_at="body",
        seen={"secret-only": "every visible case is right and only secret cases (other shapes) are wrong: look "
                             "for what the kernel fixes for the visible shapes (a count of blocks or steps, a size "
                             "written as a number, a condition on a grid index) and run it at other shapes",
              # An output block needs an input block no step reads (``judge.reads``): where it lies says what.
              "grid-short": "output block {output_block} depends on block {input_block} of {name}, which no step "
                            "reads: {name} has {blocks_along} blocks along dimension {dim} ({size} / {block}) and "
                            "the grid reaches only the first {reached}{also}. Give the grid pl.cdiv({size}, {block}) "
                            "= {blocks_along} steps along the axis that walks them",
              "block-narrow": "output block {output_block} depends on block {input_block} of {name}, which no "
                              "step reads: each step sees one {block_shape} block of {name}, and its index map "
                              "never moves along dimension {dim} ({size} elements){also}. Make the block span "
                              "dimension {dim} (block size {size}), or walk its blocks across the steps of a "
                              "reduction axis",
              # The one block read is the needed one with its axes in another order.
              "map-swapped": "output block {output_block} depends on block {input_block} of {name}, but the step "
                             "that writes it reads block {read}, the same block index in another axis order{also}: "
                             "{name}'s index map returns its block axes swapped. Return the block index in the "
                             "array's axis order, as the output's index map does",
              "map-misses": "output block {output_block} depends on block {input_block} of {name}, but the steps "
                            "that write it read only {read}{also}: make {name}'s index map give those steps every "
                            "block their output block needs (e.g. follow the reduction axis's step)",
              "map-fixed": "output block {output_block} depends on block {input_block} of {name}, which no "
                           "step reads: {name}'s index map never moves along dimension {dim}, while the grid "
                           "walks the output's blocks along it{also}: make {name}'s index map follow the output's "
                           "there (the same grid axis in the same place as in the output's index map)",
              # An input whose value reaches no write of the kernel (``identity.dataflow``).
              "unused-input": "{what}{store}: the formula needs {ref}; use it where the output is computed",
              # A mistake the instructor declared beside the reference (``compare.mistake_fit``).
              "known-mistake": "your kernel's output is what the reference computes with {name}, within this "
                               "case's tolerance{line}. {fix}",
              # A number made from another size than the reference's (``compare.constant_fit``).
              "wrong-constant": "the kernel computes with {value} at line {line}, which is {form} ({dim} = {size} "
                                "on this case){made}, where the formula has {meant} ({meant_value} here): the "
                                "reference computed with {value} in its place gives your kernel's output. Make the "
                                "number from {meant_dim}, not {dim}",
              # A number of the formula applied once more than it has (``compare.constant_fit``).
              "constant-twice": "the kernel computes with {value}, which is {form} ({dim} = {size} on this case), "
                                "at {lines}: the reference computed with {value} applied twice gives your kernel's "
                                "output, where the formula applies it once. Apply it in one place",
              # Every wrong row the right row times one number (``compare.scaled_rows``).
              "scaled-rows": "every wrong output row is the right row times one number ({low} to {high}; {rows} of "
                             "{of} rows): what each row is made of is right, only its scale is wrong{divided}",
              # Outputs moved with one input element the reference keeps them apart from
              # (``compare.mixed_axes``), and the one reduction along that axis.
              # One value landed elsewhere (``compare.mixed_axes``' moved_to): an offset, not a mixing.
              "shifted": "changing only {input}[{at}] changed output [{to}], which does not depend on it in the "
                         "reference (there only output [{ref_to}] changes): the kernel{also} puts that value "
                         "{offset}. Look for an index, a block index or a copy's source or "
                         "destination that is off by that much",
              "mixed-axis": "changing only {input}[{at}] changed {moved} outputs at {span} along axis {axis}, "
                            "which do not depend on it in the reference (there only {ref_at} along axis {axis} "
                            "changes): the reduction{lines} at line{lines} {line} {runs} along axis {raxis} of {its} "
                            "value and so mix{es} them{want}",
              "mixed": "changing only {input}[{at}] changed {moved} outputs at {span} along axis {axis}, which "
                       "do not depend on it in the reference (there only {ref_at} along axis {axis} changes): "
                       "something in the kernel mixes values along axis {axis} (a reduction, a sum over a block "
                       "or an index that runs along the wrong axis){want}",
              # Right when every block of the reduction is alike (``draws.steady``).
              "steady-carry": "the output is right when every block of {dim} is alike (its first {period} "
                              "repeated to {size}: nothing carried between steps of the reduction changes) and "
                              "wrong on this case's own inputs: the fault is in what each step does with what "
                              "earlier steps carried{carried}"},
        symptom=True,
        hidden="the output is wrong",
        chip="a real v5e computed the same wrong values for every sample kernel with this bug",
        drawn=True),
    FindingKind(
        "numerics", "Numerical problem",
        "wrong through floating point: overflow/NaN from an unstable formula, "
        "low-precision accumulation",
        detected_by=("correctness runs (NaN/Inf that only a case's larger inputs bring, every case of "
                     "its dtype with smaller inputs right, is an overflow whatever the finite outputs "
                     "say: `diagnosis.overflows`); numerics probe (stress inputs)"),
        fix="accumulate in float32 and keep intermediates in a stable range",
        fix_at="body",
        # A 16-bit scratch ref on the bfloat16 cases (``KernelSource.narrow_scratch``), no 16-bit product.
        seen={"narrow-read": "the kernel casts float32 values it reads to a 16-bit dtype ({lines}) before it "
                             "computes with them: that rounding, not the accumulation, is what costs the precision "
                             "here. Compute with the inputs in the dtype they come in",
              "narrow-scratch": "the scratch {names} declared at {line} is 16-bit on the bfloat16 cases: a sum kept "
                                "in 16 bits loses its low bits at every step; declare it float32 (pltpu.VMEM(shape, "
                                "jnp.float32), not the inputs' dtype) and cast once when writing the output"},
        chip_seen={"narrow-scratch": "a real v5e kept a sample kernel's bfloat16 scratch accumulator (flash attention) "
                                     "within the tolerance at the graded inputs where the interpreters did not: "
                                     "what a 16-bit sum loses depends on its length and the chip's rounding "
                                     "(latent: the charge stands)"},
        symptom=True,
        hidden="the output has a numerical (precision or overflow) problem",
        chip=("the chip rounds as the interpreters do or worse (its exp, log and tanh were measured less exact than "
              "XLA's on a CPU): the sample kernels' overflows gave inf on a real v5e too"),
        drawn=True),
    FindingKind(
        "out-of-bounds", "Out-of-bounds access",
        "reads or writes outside an array: an index map that addresses a block past "
        "the end (or before the start), a DMA or pl.ds slice past the edge",
        detected_by="index-map scan; TPU interpret mode's IndexError",
        fix="make the grid pl.cdiv(size, block) long and keep every index map inside its array",
        fix_at="call",
        explains=("generic", "tpu-interpret"),
        hidden="a block or DMA reaches outside an array",
        # A ref slice past its end, refused while tracing (ValueError; ``diagnosis.oob_slice``).
        seen={"slice-past-end": "a DMA or ref slice starts at {start} of a dimension of {dim} (its elements are 0 "
                                "to {end}): keep every pl.ds inside the array",
              "slice-runs-out": "a DMA or ref slice of {size} elements from {start} ends at {last}, past the end of "
                                "a dimension of {dim} (its elements are 0 to {end}): keep every pl.ds inside the "
                                "array", "wrong-dimension": WRONG_DIMENSION,
              # The grid fits the array but the index map sends a grid axis to another block axis
              # (``regions.crossed_axes``): said in the grader's words alone (a secret case's too).
              "map-axes": "the grid fits the array, but the index map puts a grid axis's step on another block "
                          "axis than the one that grid axis counts blocks along, so where the array has more "
                          "blocks along one axis than the other it asks for blocks past the end: return the block "
                          "index in the array's axis order (each grid axis's step on the block axis it counts)"},
        chip=("the core halts: on a real v5e every out-of-bounds block or DMA index in the sample kernels stopped it "
              "(RuntimeUnexpectedCoreHalt, \"BoundsCheck ... dma.hbm_to_vmem\"), and the process could use the "
              "chip no more"),
        drawn=True),
    FindingKind(
        "output-block-revisit", "Output block revisited",
        "an output block is written at grid points that are not consecutive, or "
        "across a parallel axis",
        detected_by="index-map scan; TPU interpret mode's RuntimeError",
        fix="put the axis that revisits an output block last and mark it \"arbitrary\"",
        fix_at="call",
        explains=("generic", "tpu-interpret"),
        # One bug, several views: an output block shared across a parallel axis is also
        # what makes the grid order matter and two cores race, so those are not charged again.
        same_bug=("grid-order-dependence", "data-race"),
        # A reduction axis marked parallel runs out of order on the very case and rung whose
        # test it broke, so steps read the accumulator before the step that zeroes it, and the
        # fills change what they read. (On another case, or beside a revisit elsewhere,
        # unwritten memory is its own bug.)
        same_bug_on_case=("uninitialized-memory",),
        hidden="an output block is revisited at grid points that are not consecutive",
        claim=Claim("an output block is written from both sides of an axis marked \"parallel\"",
                    "the writes agree (the same values written twice), and a chip computes it right; on a chip "
                    "with two cores the two writes race, so keep each output block to one grid point if its "
                    "values could ever differ"),
        chip=("on a real v5e a revisit after another block gave wrong values (the K axis outermost, a tile order "
              "that repeats a tile); one across a 'parallel' axis ran right there in order (latent), and is a race "
              "where a megacore chip splits that axis"),
        drawn=True),
    FindingKind(
        "uninitialized-memory", "Depends on uninitialized memory",
        "the result depends on memory the kernel never wrote: an accumulator never "
        "zeroed, an output block never written",
        detected_by=("index-map scan (blocks never visited); poisoning (fills drawn for each grading);"
                     " a failing test's own fill reruns (the findings guide: \"A failing test's own reruns\")"),
        fix="zero accumulators at the first step and write every output block in full",
        fix_at="body",
        seen={
            # The output's store under a pl.when no grid point runs (``KernelSource.never_run``).
            "store-never-runs": "the store at line {store} runs only under `{cond}` (line {when}), whose "
                                "condition is false at every step of the grid {grid}: no step stores the output. "
                                "Make it true at the step that should store (the last step along an axis is "
                                "pl.num_programs(axis) - 1)",
            "never-stored": "the kernel never stores {count} of the output's elements (the first at index "
                            "[{first}]): make the store write every valid element of its block (its mask or slice "
                            "stops short)",
            "reset-axis": "the reset at {line} runs when pl.program_id({axis}) == 0, but grid axis {axis} is "
                          "parallel (each of its steps is another output block) and the reduction runs along "
                          "axis {reduction}: what you accumulate carries one block's sums into the next; reset "
                          "at the reduction's first step, pl.when(pl.program_id({reduction}) == 0)",
            # No scratch to accumulate into: the stores and reads miss their rows.
            "stores-miss": "the kernel never stores {count} of the output's elements (the first at index [{first}]), "
                           "and {wrong} wrong outputs change with what fills memory nothing wrote: its stores and "
                           "reads do not cover the block as they should. Check each index and slice (a pl.ds start "
                           "that is not a multiple of its size, a loop bound, a slice that stops short)",
            "read-first": "the output is computed from memory nothing wrote first: initialize what you accumulate "
                          "into (zero it under @pl.when at the reduction's first step) before the first +=",
            # (A kernel without a grid has no first step: what it reads unwritten is a buffer.)
            "read-unfilled": "the output is computed from memory nothing wrote first: read a buffer only after "
                             "what fills it (a store, or a DMA's .wait()) has run",
            "unvisited": "the grid never visits some of the output's blocks: make the grid cover every output "
                         "block (pl.cdiv(size, block) steps along each axis)", "wrong-dimension": WRONG_DIMENSION},
        explains=("generic", "tpu-interpret"),
        # A buffer written at one grid point only (scratch zeroed when every program id is
        # 0) is read unwritten wherever that point has not run first: in another order, or
        # on the other core. The order check sees that same unwritten read.
        same_bug=("grid-order-dependence",),
        claim=Claim("some output blocks are never visited by the grid",
                    "the output is right there on every run (an aliased input, say, keeps its values)"),
        chip=("memory nothing wrote holds whatever it holds: on a real v5e five of the sample kernels gave wrong "
              "values and two happened to be right at the visible cases (latent: the charge stands)"),
        drawn=True),
    FindingKind(
        "grid-order-dependence", "Depends on grid order",
        "the result changes when grid points run in another order or on two cores",
        detected_by="grid-order probe (random seeds, 2 cores, recorded order)",
        fix="mark an axis \"parallel\" only when no grid point depends on another along it",
        fix_at="call",
        seen={
            "hang": "a grid step waits on a copy another step started (a prefetch of the next block across "
                    "steps), along an axis marked \"parallel\": mark it \"arbitrary\" in "
                    "pltpu.CompilerParams(dimension_semantics=...), or keep it \"parallel\" and make each step "
                    "start and wait on its own copies",
        },
        explains=("tpu-interpret",),
        hang_explains_timeout=True,
        chip=("a real v5e runs the grid in order on one core: the sample kernels that need an order gave right "
              "values there (latent); megacore chips split 'parallel' axes over two cores (JAX's Pallas TPU "
              "pipelining guide): not run on one here"),
        drawn=True),
    FindingKind(
        "padding-dependence", "Depends on edge-block padding",
        "the result depends on the padding of partial edge blocks",
        detected_by=("poisoning, differences confined to partial edge blocks; a failing test's own "
                     "reruns with the padding filled apart"),
        fix="mask the padded part of edge blocks before it reaches a valid result",
        fix_at="body",
        # Padding past the end of an input, summed by a reduction along that axis (a K block
        # in a matmul): the output's edge blocks are whole, so "mask edge blocks" would not say where.
        fixes={"input-padding": "mask the padding of an input's partial block before the reduction sums it, "
                                "or use a block size that divides that axis"},
        seen={
            # (``feedback.evidence.padded_reads``: the inputs whose last block sticks out, one size.)
            "partial-input-block": "blocks of {block} along {along} ({named}) leave a last block of {real} real "
                                   "elements and {pad} of padding, which the reduction adds in: mask the "
                                   "padding{both} (jnp.where({index}iota < {size}, block, 0), iota a "
                                   "lax.broadcasted_iota along that dimension), or use a block that divides "
                                   "{size}{divides}",
        },
        explains=("generic", "tpu-interpret"),
        chip=("the padding of a partial block holds whatever it holds: on a real v5e the sample kernel overflowed "
              "to inf at the case with a partial block"),
        drawn=True),
    FindingKind(
        "data-race", "Data race", "the race detector found conflicting accesses",
        detected_by="races probe (`detect_races`, 1 and 2 cores)",
        fix="never let two grid points on a parallel axis write the same block",
        fix_at="body",
        seen={
            "cores-overlap": "both cores of the pl.kernel mesh write {what}: give each core a part of its own "
                             "(split the work by jax.lax.axis_index so the two ranges do not overlap)",
            "dma-in-flight": "the kernel reads {what}{lines} while a DMA into it is still in flight: copy into a "
                             "buffer (a slot) nothing reads until that copy's .wait(), e.g. prefetch into the "
                             "other slot, or wait on the copy before reading",
            "blocks-shared": "two grid points that may run at once both write {what}: give each grid point along a "
                             "parallel axis an output block of its own, or mark that axis \"arbitrary\"",
        },
        explains=("tpu-interpret",),
        chip=("a real v5e has one TensorCore and runs the grid in order: both racing sample kernels gave right values "
              "there (latent); megacore chips (v4, v5p) split 'parallel' axes over two TensorCores (JAX's Pallas TPU "
              "pipelining guide), where the race can show: not run on one here"),
        chip_seen={"cores-overlap": (
            "a real v5e has one TensorCore: a racing two-core pl.kernel mesh among the sample kernels gave "
            "right values there (latent: both cores wrote the same values); on a chip with two TensorCores "
            "(v4, v5p) a mesh's cores run at once, where the race can show: not run on one here")},
        drawn=True),
    FindingKind(
        "dma-protocol", "DMA or semaphore misuse",
        "a DMA or semaphore is misused: waited before started, never waited, buffer "
        "reused while in flight, deadlock",
        detected_by=("races probe (`dma_execution_mode` on_wait vs eager, hangs, semaphores left); a "
                     "hang explains the rung's timeouts"),
        fix="start every copy before waiting on it, and wait on each copy once",
        fix_at="body",
        seen={
            "refilled": "a copy lands in a buffer while its data is still to be read (right only when the copy "
                        "completes late): start the next copy into another buffer slot, and refill a slot only "
                        "after its data has been read",
            "read-early": "a buffer is read before its copy is waited on (right only when the copy completes "
                          "early): call .wait() on the copy before reading its destination",
            "hang": "a .wait() that no .start() satisfies: each wait must name the very copy a .start() before "
                    "it began (the same source, the same destination slot and the same semaphore: a wait that "
                    "names another slot or semaphore than its start waits forever), and each copy is waited on "
                    "once",
            "never-waited": "a copy is started and never waited on: wait on every copy you start before the "
                            "kernel ends",
            "wrong-semaphore": "wait on the semaphore the copy was started with: the .wait() waits on {waits_on} "
                               "for the copy into {copy}, which was started on {started_on} at {start}",
            "never-waited-copy": "wait on every copy you start, once, before its destination is read: the "
                                 "copy of {source} into {copy} started at {start} is never waited on",
            "wrong-slot": "start each copy into the slot its wait names: the copy of {source} is started into "
                          "{started_into} at {start}, but the .wait() at {wait} waits for it in {waits_in}, where "
                          "it was never started; start it into {waits_in} (the slot the wait and the reads after "
                          "it use, not the one still being read)",
        },
        explains=("generic", "tpu-interpret"),
        # Data read before its copy lands, or through a semaphore two copies share, is what
        # the fills change (the poisoning check sees the DMA bug, not a second one) and what
        # the race detector flags (the DMA engine writing a buffer the kernel reads).
        same_bug=("uninitialized-memory", "data-race"),
        hang_explains_timeout=True,
        chip=("a DMA started and never waited halted a real v5e's core (\"Semaphore ... has a nonzero value upon "
              "exit\"); a wait on a DMA never started hangs it for good; a buffer refilled before use or a shared "
              "semaphore gave right values there by the DMA's timing alone (latent: the charge stands)")),
    FindingKind(
        "compile-reject", "The TPU compiler will refuse it",
        "block tiling, dtype or an unsupported op, though both interpreters run it",
        detected_by="TPU cross-lowering on CPU + 64-bit dtype check",
        # The block-tiling rule's fix is the general one.
        fix="use blocks whose last two dimensions are multiples of (8, 128)",
        fix_at="call",
        # By the rule the lowering refused (the compile check's rule_id).
        fix_by="rule_id",
        fixes={
            "unsupported-op": "compute with the operations the TPU lowering implements inside kernels "
                              "(no sort or cumsum in a kernel)",
            "64-bit-dtype": "use float32 or int32 inside the kernel, not 64-bit types",
            "1d-block": "give a 1-D block the whole array, or a multiple of 1024 elements",
            "buffer-count": "ask for at most two buffers per BlockSpec: pl.Buffered(1) or pl.Buffered(2)",
            "matmul-accumulator": "give the product a float32 result: pass preferred_element_type=jnp.float32 "
                                  "to jnp.dot (or lax.dot_general), and cast it where you store it",
            "lowering": "change what the compiler's message names; the interpreters cannot check it",
        },
        same_bug_by={"matmul-accumulator": ("numerics",)},
        chip=("a real v5e's compiler refused every sample kernel with this bug (the block-tiling rule; a 16-bit "
              "matmul result: \"Expected matmul acc to be 32-bit\")")),
    FindingKind(
        "vmem-overflow", "Blocks overflow VMEM",
        "blocks plus scratch exceed the target chip's VMEM at the real problem size",
        detected_by="VMEM budget at the spec's production size",
        fix="use fixed block sizes that fit VMEM at the real problem size",
        fix_at="call",
        chip=("a real v5e refused to compile blocks and scratch over its 16 MiB of scoped VMEM "
              "(CompileTimeScopedVmemOom); at the visible cases' small sizes the same kernels ran")),
    FindingKind(
        "inconsistent-kernel", "A different kernel at other sizes",
        "at a size no test runs (production, speed, stress) the function builds a kernel "
        "the tests did not grade, or (at a stress input) the graded kernel in other dtypes",
        detected_by=("the program of each size no test runs compared with the graded kernels' faces, "
                     "and a stress input's dtypes with theirs (`grading/judge/faces.py`, "
                     "`grading/identity/numbers.py`)"),
        fix="build the graded kernel at every size, in the same dtypes (only its numbers may "
            "follow the shape)",
        fix_at="call",
        chip="not a question for the chip: which program a size builds is decided before it runs"),
    FindingKind(
        "not-a-kernel", "Work done outside the kernel",
        "the work is not done in a pallas_call (jnp outside the kernel, the "
        "reference called)",
        detected_by=("structure probe (primitives outside kernels, required manual DMA), on every "
                     "traced size"),
        fix="do the assignment's work inside the kernel passed to pl.pallas_call",
        seen={
            "outside": "{prim} computes on the inputs' data outside the kernel: do that work inside the kernel "
                       "passed to pl.pallas_call (outside it, data may only be moved and handed to kernels)",
        },
        chip="the chip runs work outside a kernel as ordinary XLA: no question for the TPU compiler"),
    FindingKind(
        "chip-reject", "Refused by the TPU compiler", "on a real TPU the compiler refused it",
        detected_by="TPU stage (later)",
        fix="see the compiler's message for the construct it refused"),
    FindingKind(
        "chip-divergence", "Chip result differs",
        "on a real TPU the compiled result differs from the interpreters'",
        detected_by="TPU stage (later)",
        fix="compare the chip's output with the interpreters' on the failing case"),
)
CATALOGUE: Mapping[str, FindingKind] = MappingProxyType({k.id: k for k in _KINDS})

# Root-cause order: when several findings hit one test, the earliest here is the
# primary one (an out-of-bounds map explains the wrong numbers it causes).
PRECEDENCE: tuple[str, ...] = (
    "submission-error", "not-a-kernel", "inconsistent-kernel", "out-of-bounds", "output-block-revisit",
    "dma-protocol", "data-race", "uninitialized-memory", "padding-dependence",
    "grid-order-dependence", "compile-reject", "vmem-overflow", "chip-reject",
    "numerics", "wrong-result", "chip-divergence",
)
if set(PRECEDENCE) != set(CATALOGUE) or len(PRECEDENCE) != len(CATALOGUE):
    raise ValueError(f"every finding ID needs one place in PRECEDENCE; got {sorted(set(PRECEDENCE) ^ set(CATALOGUE))}")
for _k in _KINDS:
    if not {i for ids in _k.same_bug_by.values() for i in ids} <= set(CATALOGUE):
        raise ValueError(f"{_k.id}: same_bug_by names IDs the catalogue does not hold: {dict(_k.same_bug_by)}")
    if not set(_k.same_bug + _k.same_bug_on_case) <= set(CATALOGUE):
        raise ValueError(f"{_k.id}: same_bug names IDs the catalogue does not hold: "
                         f"{sorted(set(_k.same_bug + _k.same_bug_on_case) - set(CATALOGUE))}")
