"""Every fact the grader relies on that belongs to a JAX release.

Pure data, no JAX import: the parent reads the message texts from here too.
A course grades on one of ``SUPPORTED``; the facts common to them are here,
and the few that differ live in one module per release in this package
(``jax_0_10_2.py``, ``jax_0_12_0_1.py``: "jax_" and the release with its dots
as underscores), chosen by the installed jax's version, read from its package
metadata without importing it. The releases supported are the modules present:
adding one is its module here (and its lock file, requirements/jax-<release>.txt,
which setup.sh finds the same way). Nothing outside ``pallas_surface/`` asks
which release is installed. The canary tests in ``tests/test_canaries.py`` run
on every release and name the fact that moved.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import re

_PREFIX = "jax_"


def _module(version: str) -> str:
    """The module of a release's own facts: jax_0_12_0_1 for 0.12.0.1."""
    return _PREFIX + version.replace(".", "_")


def _release_of(module: str) -> tuple[int, ...]:
    parts = module[len(_PREFIX):].split("_")
    if not all(p.isdigit() for p in parts):
        raise ValueError(f"a release module must be named jax_ and the release's numbers joined by _ "
                         f"(jax_0_12_0_1); got {module}.py in {__path__[0]}")
    return tuple(int(p) for p in parts)


def _present() -> tuple[str, ...]:
    """The releases this package has a module for, oldest first."""
    found = sorted((_release_of(m.name) for m in pkgutil.iter_modules(__path__) if m.name.startswith(_PREFIX)))
    return tuple(".".join(map(str, r)) for r in found)


# Oldest first; the newest is the default for a new assignment and a build.
SUPPORTED = _present()
NEWEST = SUPPORTED[-1]


def _installed() -> str | None:
    try:
        return importlib.metadata.version("jax")
    except importlib.metadata.PackageNotFoundError:
        return None


# The release this process grades on (None: no jax installed).
INSTALLED = _installed()


class UnsupportedRelease(RuntimeError):
    """The installed jax is not one the grader knows."""


def course_note(course: str) -> str | None:
    """What to tell someone grading with another jax than the course's, or None."""
    if INSTALLED == course:
        return None
    have = f"jax {INSTALLED}" if INSTALLED else "no jax"
    fix = f'pip install "jax=={course}" "jaxlib=={course}"'
    if INSTALLED not in SUPPORTED:
        return (f"this course grades on jax {course}, and this grader knows only "
                f"{', '.join(SUPPORTED)}; {have} is installed. Install the course's: {fix}")
    return (f"this course grades on jax {course}; {have} is installed, so this feedback may differ "
            f"from Gradescope's. Install the course's: {fix}")


def facts(version: str):
    """The release-specific facts of ``version`` (a supported release), as a module:
    what a course's handout and feedback say about the release it pins, whichever
    release this process runs."""
    if version not in SUPPORTED:
        raise UnsupportedRelease(f"jax {version} is not a release this grader knows ({', '.join(SUPPORTED)})")
    return importlib.import_module(f"{__name__}.{_module(version)}")


# The installed release's own facts, as if star-imported. The newest release's also
# stand for an unsupported one, which the local grade refuses by name (course_note).
globals().update({k: v for k, v in vars(facts(INSTALLED if INSTALLED in SUPPORTED else NEWEST)).items()
                  if not k.startswith("_")})


# -- the traced program -------------------------------------------------------
PALLAS_CALL = "pallas_call"
# pl.kernel (and 0.12's pl.core_map) trace to an mpmd_map equation over a
# mesh: one body per mesh, no grid, no block specs. On CPU JAX lowers it as a
# pallas_call whose grid is the mesh (jax/_src/pallas/mpmd.py,
# _mpmd_map_fallback_lowering, the same in 0.10.2 and 0.12); the rebuild binds
# that pallas_call, so every rung, probe and analysis sees a pallas_call.
MPMD_MAP = "mpmd_map"
KERNEL_CALLS = (PALLAS_CALL, MPMD_MAP)
# A TensorCoreMesh's cores: a TPU chip has one or two TensorCores.
MAX_MESH_CORES = 2
# lax.platform_dependent: a platform_index equation picks a cond's branch by the
# platform the program is lowered for. The grader judges the branch a TPU would
# run on every rung (the interpreters run on a CPU, which would pick another).
PLATFORM_INDEX = "platform_index"
# jax.debug.print, outside a kernel as inside one (pl.debug_print): one equation on
# both releases. Outside a kernel it lowers as a host callback on the backend that runs
# the program (see rung.without_host_prints).
HOST_PRINT = "debug_print"
BRANCHES_PLATFORMS = "branches_platforms"
# Higher-order primitives whose bodies the rung rewrite re-evaluates, and the
# param that holds the body: closed jaxprs, then open ones.
INLINE_CLOSED = {"pjit": "jaxpr", "jit": "jaxpr", "closed_call": "call_jaxpr",
                 "core_call": "call_jaxpr", "custom_jvp_call": "call_jaxpr",
                 "custom_vjp_call": "call_jaxpr"}
INLINE_OPEN = {"remat2": "jaxpr", "checkpoint": "jaxpr"}
# Kernel-body primitives that start and finish a manual DMA.
DMA_PRIMITIVES = ("dma_start", "dma_wait")
RUN_SCOPED = "run_scoped"

# -- a student's own checks (pl.debug_check) ------------------------------------
# pl.debug_check traces to checkify's check primitive with debug=True: a no-op on
# both interpreters (and on a TPU unless Pallas's debug checks are on, the config
# below). The rebuild keeps it; on the interpreters the rung rewrite runs each one
# in a kernel as a plain check (debug=False), which XLA:CPU raises at run time
# through a host callback once this config is on (else lowering refuses it); for
# a TPU, Pallas lowers it to an assertion with its debug checks on. Measured on the
# lent v5e (jax 0.10.2): switch off (the default), a failing check is dropped; on,
# a passing check runs and a failing one halts the core ("RuntimeUnexpectedCoreHalt:
# ... Assertion", CHIP_HALT: that process's TPU client is dead). The compile check
# and the TPU stage keep the default (both releases lower the check either way:
# tests/test_canaries.py).
CHECKS_AT_RUN_TIME = "jax_experimental_unsafe_xla_runtime_errors"
PALLAS_DEBUG_CHECKS = "jax_pallas_enable_debug_checks"
CHECK = "check"
# A failed check raises checkify's JaxRuntimeError whose text is the check's message,
# formatted, then this (checkify.FailedCheckError.__str__, both releases); the
# rebuild puts the student's line in front of it (special.check).
CHECK_FAILED = re.compile(r"^(?P<message>.*) \(at (?P<where>[^()\n]{0,300})\) \(`check` failed\)$", re.S)

# -- how TPU interpret mode reports problems ----------------------------------
# It raises inside a host callback; XLA wraps the exception as
# "JaxRuntimeError: INTERNAL: CpuCallback error ..." with the real exception's
# last traceback line buried in the text.
CALLBACK_WRAPPER = re.compile(r"CpuCallback error")
BURIED_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<msg>.*)$", re.M)

# (exception type, message pattern, finding ID, the guarantee in plain words)
ERROR_RULES = (
    ("IndexError", re.compile(r"Out-of-bounds"), "out-of-bounds",
     "every block (and every DMA) must lie inside its array"),
    ("RuntimeError", re.compile(r"Revisited block"), "output-block-revisit",
     "an output block may only be revisited at consecutive grid points"),
    # A ref sliced past its end with a static start (x_hbm.at[pl.ds(192, 64)] of a
    # 192-row array, a DMA's source or a ref read) is refused while tracing, on
    # both rungs, by state.indexing.NDIndexer (both releases; tests/test_canaries.py).
    ("ValueError", re.compile(r"Out of bound slice: start=-?\d+"), "out-of-bounds",
     "every DMA and every ref slice must lie inside its array"),
)
# That error's own numbers: the slice's start (and, when it starts inside but
# runs past the end, its size and stride) and the dimension it indexes.
OOB_SLICE = re.compile(r"Out of bound slice: start=(?P<start>-?\d+)"
                       r"(?:, size=(?P<size>\d+), stride=(?P<stride>-?\d+))?, dim=(?P<dim>\d+)\.")

# Where an out-of-bounds access went, from the IndexError's text: a block of an
# operand ('block index (0, 2) for input "x_ref" in iteration (0, 2) ...') or a
# DMA on a buffer ('read of (0 0 hbm 100)'), then 'reading [(slice(0, 8, 1),
# ...)] but input has shape (16, 256)' (reading/writing/swapping; buffer/input/output).
OOB_BLOCK = re.compile(r'block index \((?P<block>[-\d, ]*)\) for (?P<kind>input|output) "(?P<name>[^"]{0,200})" '
                       r'in iteration \((?P<point>[-\d, ]*)\)')
OOB_BUFFER = re.compile(r"(?P<access>read|write|swap) of \((?P<buffer>[\w ]{1,80})\)")
OOB_WINDOW = re.compile(r"(?P<access>reading|writing|swapping) "
                        r"\[\((?P<slices>(?:slice\(-?\d+, -?\d+, -?\d+\),? ?)+)\)\] "
                        r"but (?:buffer|input|output) has shape \((?P<shape>[\d, ]*)\)")
SLICE = re.compile(r"slice\((-?\d+), (-?\d+), -?\d+\)")

# A detected race is reported (a text starting with RACE_MARK; where it goes,
# and whether the run stops there, is per release: RACE_PARAMS, RACE_REPORTED_TO)
# and sets a flag on a module global.
RACE_MARK = "RACE DETECTED"
RACE_FLAG_MODULE = "jax._src.pallas.mosaic.interpret.interpret_pallas_call"
RACE_FLAG_PATH = ("races", "races_found")
# One access of a race report: RACE_ACCESS (per release: the thread is named differently).
# A kernel that ends with a semaphore still signalled makes the interpreter
# print a line with this fragment (capitalised either way).
SEMAPHORE_MARK = "emaphore"
# A host callback that raised is logged by JAX ("jax.io_callback failed", at ERROR)
# before the exception reaches the caller: TPU interpret mode's out-of-bounds check
# raises in one. The exception is the finding; the log line is no output of the student's.
CALLBACK_ERROR_LOGGER = "jax._src.callback"

# -- where the interpreters take "uninitialized" values from ------------------
# (module, attribute): the generic interpreter's outputs, scratch and padding
# (read while tracing), and TPU interpret mode's arrays (read while tracing)
# and scalars (read at run time inside its callbacks).
GENERIC_FILL = ("jax._src.pallas.primitives", "uninitialized_value")
TPU_FILL_ARRAY = ("jax._src.pallas.mosaic.interpret.utils", "get_uninitialized_array")
TPU_FILL_VALUE = ("jax._src.pallas.mosaic.interpret.utils", "get_uninitialized_value")
# Both interpreters pad an input whose blocks do not divide it with one scalar
# "uninitialized" value (module, function(value, block_shape[, mode])): the
# padding would be one value throughout, which a kernel can recognise.
GENERIC_PAD = ("jax._src.pallas.hlo_interpreter", "_pad_to_block_dimension")
TPU_PAD = ("jax._src.pallas.mosaic.interpret.utils", "pad_to_block_dimension")
# TPU interpret mode builds its simulated memory when a kernel starts running
# (a host callback, module, function(token, ..., *, interpret_params)), and reads
# these parameters only from that memory, at run time: a run may switch them
# without a program of its own (the rest of InterpretParams is compiled in).
SHARED_MEMORY_INIT = ("jax._src.pallas.mosaic.interpret.interpret_pallas_call", "_initialize_shared_memory")
RUNTIME_PARAMS = frozenset({"detect_races", "dma_execution_mode", "on_race"})

# -- compiling the interpreters' programs -------------------------------------
# COMPILER_OPTIONS (per rung) is per release: XLA's CPU options change with jaxlib.
# With more than one simulated core, TPU interpret mode runs each core's part
# of the grid in a thread of its own, and each thread compiles that part anew,
# at run time, with XLA's default options (module, function(jaxpr, consts,
# *args)): two threads compile the same program twice on every run. The hook
# compiles it once per program with the options above.
THREAD_RUNNER = ("jax._src.pallas.mosaic.interpret.thread_map", "_run_jaxpr")
# Every io_callback both interpreters make (TPU interpret mode's loads, stores,
# DMAs and semaphores: dozens a grid step) runs through this function (module,
# function(*args, result_avals, callback, sharding, ordered)). It first copies
# each argument, a host numpy array XLA hands over (owning its data, read-only),
# into a jax.Array on the CPU device; the callbacks then turn most of them back
# into Python ints and numpy. Those copies were most of a rerun's time (a
# one-core matmul rerun: 0.14 s -> 0.03 s without them); the hook calls back
# with the numpy arrays as they come, under the same default device (0.12's
# impl also sets aside the calling thread's mesh: the grader's child sets none).
IO_CALLBACK = ("jax._src.callback", "io_callback_impl")
# TPU interpret mode permutes each 'parallel' grid axis with
# jax.random.key(random_seed or 0), split once per parallel axis, while it
# traces (module, function(grid, compiler_params, random_seed)); which axes are
# parallel it reads with PARALLEL_DIMS(compiler_params, rank) in that module.
GRID_COORDINATES = ("jax._src.pallas.mosaic.interpret.interpret_pallas_call", "_get_randomized_grid_coordinates")
PARALLEL_DIMS = "_get_parallel_dim_semantics"

# -- the TPU compiler, as far as CPU can see it -------------------------------
# Pallas's TPU lowering reads the tiling (8 sublanes x 128 lanes on every
# generation it knows) from the device kind, which it takes from the abstract
# mesh or else from the default device: on CPU that is "cpu", and every rank-1
# block is refused with "Unsupported TPU device kind: cpu".
TARGET_DEVICE_KIND = "TPU v5 lite"
# What Pallas raises when code asks for the chip while tracing on CPU.
NO_TPU_DEVICE = "Unsupported TPU device kind"
# Dtypes Mosaic cannot put in a kernel on any TPU generation.
DTYPES_64BIT = ("float64", "int64", "uint64", "complex64", "complex128")
# (message pattern, rule id, the rule in plain words) for lowering failures.
COMPILE_RULES = (
    (re.compile(r"divisible by 8 and 128"), "block-tiling",
     "the last two dimensions of every block must be multiples of 8 and 128 (for 32-bit types), or "
     "equal the whole array's dimensions"),
    (re.compile(r"Unimplemented primitive in Pallas TPU lowering for \w+: (\w+)"), "unsupported-op",
     "the kernel uses an operation the TPU compiler does not implement inside kernels"),
    (re.compile(r"64-bit"), "64-bit-dtype", "TPUs have no 64-bit vector types: use float32/int32"),
    (re.compile(r"requires that rank 1 block"), "1d-block",
     "a 1-D block must be the whole array, a multiple of 1024 elements (8 x 128), or a power of "
     "two of at least 128 elements (256 for 16-bit types)"),
    (re.compile(r"Only single \(1\) and double \(2\) buffering are supported"), "buffer-count",
     "a BlockSpec of a pallas_call may ask for one or two buffers only (pl.Buffered(1) or "
     "pl.Buffered(2)); deeper buffering is for pltpu.emit_pipeline inside a kernel"),
    # Mosaic's verifier, run by Pallas's lowering too: a bf16 x bf16 -> bf16 jnp.dot in a
    # kernel (measured on a v5e, libtpu 0.0.42.1, and cross-lowered on CPU, both releases).
    (re.compile(r"Expected matmul acc to be 32-bit"), "matmul-accumulator",
     "a matrix product inside a kernel must have a 32-bit result: the TPU's matrix unit "
     "accumulates in float32 (int32 for integers), so a dot of bfloat16 operands without "
     "preferred_element_type has a bfloat16 result the compiler refuses"),
)

# Pallas puts a request to file a JAX bug in front of every Mosaic verification
# error (jax._src.pallas.mosaic.error_handling.MLIR_ERR_PREFIX, both releases),
# whatever the kernel did: a bf16 matmul result is the student's, not JAX's bug.
# The compiler's own words (the op and its message) follow it.
MOSAIC_VERIFY_PREFIX = re.compile(r"Pallas encountered an internal verification error\. "
                                  r"Please file a bug at \S+\s+Error details:\s*")


def compiler_words(message: str) -> str:
    """A TPU lowering's error as the compiler said it, without JAX's request to file a bug."""
    return MOSAIC_VERIFY_PREFIX.sub("", message)


# -- the TPU stage's device (autograder/tpu/chip/real.py) --------------------------
# What Mosaic refuses with: Pallas's TPU lowering wraps a rule's failure in
# LoweringException (NotImplementedError for an unsupported op or precision),
# and a refusal of the compiler proper comes back as a JaxRuntimeError whose
# message names Mosaic (re-raised as MosaicError where Pallas can place it).
# (module, class name); anything else raised while compiling is not a refusal.
MOSAIC_REFUSALS = (("jax._src.pallas.mosaic.lowering", "LoweringException"),
                   ("jax._src.pallas.mosaic.error_handling", "MosaicError"))
MOSAIC_MARK = "Mosaic"
# libtpu takes a lock on the chip: a second process that asks for the TPU
# backend gets "ABORTED: The TPU is already in use by process with pid N"
# (or, from the driver, "open(/dev/accel0): Device or resource busy").
# On the lent v5e (libtpu 0.0.42.1) it was "Internal error when accessing libtpu
# multi-process lockfile", raised at once, with no fallback to the CPU.
TPU_HELD = re.compile(r"already in use|resource busy|libtpu_lockfile|multi-process lockfile", re.I)
# How a real TPU v5e said that a kernel stopped the core (jax 0.10.2, libtpu
# 0.0.42.1): an out-of-bounds block or DMA index ("BoundsCheck ...
# dma.hbm_to_vmem") and a DMA started and never waited ("Semaphore (scratch
# argument N) has a nonzero value upon exit") both raise RuntimeUnexpectedCoreHalt,
# after which that process's TPU client is dead (a new process gets the chip).
CHIP_HALT = re.compile(r"UnexpectedCoreHalt|core halt|BoundsCheck|nonzero value upon exit", re.I)
# XLA:CPU's thunk runtime tags each op it runs with its module and run
# (stats "hlo_module" and "run_id") only when compiled with this option; the
# CPU stand-in's kernels are, so the profiler trace gives their execution
# time as it gives a TPU module's. Without it a CPU trace has no module names.
CPU_TRACE_OPTIONS = {"xla_cpu_enable_xprof_traceme": True}
# A profiler trace's device planes list each execution of a compiled module on
# this line, the event named after the module (TPU: "jit_name" or
# "jit_name(run)"; GPU: the module name as the "hlo_module" stat).
MODULES_LINE = "XLA Modules"
# Pallas lowers a dot_general to tpu.matmul with no precision attribute when
# its precision is None or DEFAULT ("That's the default in Mosaic"), with
# #tpu.contract_precision<fp32> for HIGHEST, and raises for HIGH
# (jax/_src/pallas/mosaic/lowering.py, _dot_general_lowering_rule). What the
# default means is decided in libtpu (closed source since the Mosaic passes
# left the jax repository); the Pallas TPU docs (details.rst) say 32-bit
# operands "will be rounded to bfloat16 unless float32 precision is
# requested", and lax.Precision.DEFAULT's docstring says the same for TPUs.
DEFAULT_DOT_ROUNDS_TO = "bfloat16"
