"""The TPU stage for one kernel: check it on the chip, then time it.

``kernel`` checks and times one submission; ``baseline`` makes the instructor
solution the students' yardstick; ``timing`` says how a kernel is timed so it
cannot game it; ``chip_numerics`` how far a TPU's transcendentals may stray;
``results`` the T1 test merged into a results.json; ``jobs`` what a chip worker runs.
"""
