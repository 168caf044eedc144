"""Running a program on a rung: ``rung`` (forcing an interpreter, lowering and
compiling for a TPU, reading errors), ``hooks`` (the switches the probes turn: fills,
grid order, threads, race flag, host callbacks), ``precision`` (a TPU's default
float32 product precision), ``chips`` (JAX's chip names and figures).
"""
