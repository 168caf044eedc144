"""The only place that touches JAX and Pallas internals (pinned: jax 0.10.2).

Four modules, imported one by one (this package imports nothing, so the grader's
own process can read ``release`` without importing JAX):

- ``release``: every fact that belongs to one JAX release (names, message
  texts, where flags live); pure data, no JAX. An upgrade starts there.
- ``rung``: forcing a rung on a student's traced function, running it, and
  unwrapping interpreter errors.
- ``analysis``: static analyses of a traced ``pallas_call`` (index maps over
  the grid, TPU cross-lowering, VMEM budget, structure); no kernel runs.
- ``hooks``: the interpreters' switches the probes turn: memory fills read at
  run time, the grid-point recorder, the race flag, captured interpreter output.

The canary tests in ``tests/test_canaries.py`` fail loudly when the pinned JAX
changes any of it. Imported only in the child process: the grader's own
process never imports JAX.
"""
