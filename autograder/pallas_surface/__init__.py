"""The only place that touches JAX and Pallas internals, for every supported release.

A course grades on one exact JAX release, one of ``release.SUPPORTED``. This package
imports nothing itself, so the grader's own process can read ``release`` and the
documents' grammar without importing JAX. Four rooms, lowest first:

- ``release/``: every fact that belongs to a JAX release (names, message texts,
  where flags live), pure data; one file per release (``jax_<version>.py``) holds
  what only that release does, and the files present are the releases supported.
  An upgrade starts there.
- ``program/``: a traced program as data, both ways (``schema``, ``serial``,
  ``rebuild``, ``jaxprs``).
- ``rungs/``: forcing an interpreter rung on a traced function and running it,
  lowering and compiling for a TPU, and the switches the probes turn (``hooks``).
- ``static/``: what a traced kernel is without running it (index maps, VMEM,
  structure, the outside-kernel allow-list, the cost of each grid step).

The canary tests in ``tests/test_canaries.py`` fail loudly when the pinned JAX
changes any of it. JAX is imported only in child processes: the grader's own
process never imports it.
"""
