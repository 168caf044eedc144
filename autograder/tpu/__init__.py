"""The TPU's time: the estimate on CPU and the TPU stage on a real chip.

The verbs live here, one module each: ``estimate`` (on CPU, any grading), ``command``
(``speed``: time a class on a TPU host), ``merge`` (speed.json into a review site)
and ``onchip`` (a student's own check on a Colab TPU). Below them:

- ``stage/``: one kernel checked on the chip and timed (``kernel``), the solution as
  the baseline, the timing rules, the chip's numerics allowance, the T1 test, and the
  jobs a chip worker runs;
- ``chip/``: the machine: the ``device`` interface, ``real`` (JAX on a TPU, or a CPU
  stand-in), ``fake`` (scripted, for tests and dry runs), the interpreters' output
  for the check, and the worker process that holds the chip (``worker``, ``chipproc``).
"""
