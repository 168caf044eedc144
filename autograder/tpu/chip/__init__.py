"""The machine the TPU stage times on: the ``device`` protocol and its
implementations (``real`` on JAX, ``fake`` scripted), the interpreters' output for
the stage's check (``interpreter``), and the one worker process that holds the chip
(``worker``; ``chipproc`` is the parent's side of it). Nothing here judges a kernel.
"""
