"""The facts that belong to jax 0.10.2 alone (``release`` re-exports them)."""
import re

PINNED = "0.10.2"

# A program with its constants is a ClosedJaxpr around an open Jaxpr (jaxprs.py).
# A scan equation names its constants' and carries' counts (num_consts,
# num_carry); False: it packs its inputs' tree as ft_in = (consts, carry, xs).
SCAN_COUNTS_NAMED = True

# Pallas refuses a kernel dot at Precision.HIGH ("Unsupported dot precision").
DOT_HIGH_LOWERS_TO = None

# The module of the flat trees a scan equation's ft_in/ft_out params hold (None:
# none). The document keeps their tuple structure and leaf counts; a part that is
# not a tuple is rebuilt as that many leaves (what the scan's binding reads).
FLAT_TREES = None

UNIFIED_JAXPR = False

# pltpu.TensorCoreMesh is built from an array of TensorCores and a list of axis
# names (pltpu.create_tensorcore_mesh); 0.12 builds it from axis_name= and num_cores=.
TENSORCORE_MESH_FIELDS = False

# No jax._src.tpu_info: the TPU lowering takes the chip from the abstract mesh.
TPU_INFO_REGISTRY = None

# TPU interpret mode prints a detected race's report to stdout, sets the flag
# and carries on; no parameter changes that.
RACE_PARAMS: dict = {}
RACE_REPORTED_TO = "stdout"

# One access of a race report: "write of ('hbm', 101, 0, 0)[(slice(64, 128, 1),
# slice(0, 256, 1))] from 106, 0, file.py:46:11 (kernel)" (device or DMA id, core, where).
RACE_ACCESS = re.compile(r"(?P<access>read|write) of \((?P<buffer>[^)]{1,80})\)\[\("
                         r"(?P<slices>(?:(?:slice\(-?\d+, -?\d+, -?\d+\)|-?\d+),? ?)+)\)\] "
                         r"from (?P<who>-?\d+), (?P<core>-?\d+),? (?P<where>.{0,200})")

# What a student adds to see races while debugging, and what the report does
# (the feedback and the reproduction snippet quote it).
RACE_SWITCH = "pltpu.InterpretParams(detect_races=True)"
RACE_BEHAVIOUR = "prints a report starting with 'RACE DETECTED' for every race; the run goes on"

# -- compiling the interpreters' programs -----------------------------------
# Compiling, not running, is most of a grading's interpreter work: TPU
# interpret mode's programs run for milliseconds (their work is in host
# callbacks) and compiled for most of a second each. XLA's CPU fusion
# emitters (the default in this release) take about twice as long to compile
# these programs as its older elemental emitters, which both rungs use; one
# codegen split is kept for TPU interpret mode's small programs. LLVM's
# optimisation level 0, used before, is not: it changed flash attention's
# exp in the last bits. Every corpus and solution output was checked bit for
# bit equal to XLA's defaults with these options, and tests/test_canaries.py
# keeps checking. An unknown option makes compiling raise; a canary compiles
# with each set.
COMPILER_OPTIONS: dict[str, dict] = {
    "tpu-interpret": {"xla_cpu_parallel_codegen_split_count": 1,
                      "xla_cpu_use_fusion_emitters": False},
    "generic": {"xla_cpu_use_fusion_emitters": False},
}
