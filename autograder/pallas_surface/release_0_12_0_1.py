"""The facts that belong to jax 0.12.0.1 alone (``release`` re-exports them).

What changed since 0.10.2 that the grader sees: ``ClosedJaxpr`` merged into
``Jaxpr``; ``InterpretParams.on_race`` (default ``"raise"``: a RuntimeError at
the first race, before the flag is set); with ``"warn"`` the report goes to
the logging module (read races to the race-detection module's logger, write
races to the root logger) instead of stdout.
"""
PINNED = "0.12.0.1"

UNIFIED_JAXPR = True

# The grader asks for "warn" so a run finds every race and sets the flag, as
# 0.10.2 does; the reports are captured from logging.
RACE_PARAMS: dict = {"on_race": "warn"}
RACE_REPORTED_TO = "logging"

RACE_SWITCH = 'pltpu.InterpretParams(detect_races=True, on_race="warn")'
RACE_BEHAVIOUR = ("raises RuntimeError('RACE DETECTED ...') at the first race by default "
                  "(on_race='raise'); with on_race='warn' it logs every report as a warning, "
                  "sets pltpu.interpret_pallas_call.races.races_found and goes on")

# -- compiling the interpreters' programs -----------------------------------
# jaxlib 0.12's XLA has no xla_cpu_use_fusion_emitters compile option (0.10.2
# used it to halve compile time); one codegen split is kept for TPU interpret
# mode's small programs. The canaries check every solution bit for bit
# against XLA's defaults with these options.
COMPILER_OPTIONS: dict[str, dict] = {
    "tpu-interpret": {"xla_cpu_parallel_codegen_split_count": 1},
    "generic": {},
}
