"""Isolation: where student code runs and what may come back (no JAX).

``sandbox`` starts a child as another user under limits and reads it; ``confinement``
the users, slots and the closed file layout; ``container`` Gradescope's limits
emulated with cgroups (for benchmarks); ``channel`` and ``protocol`` the events a
child may send, each checked; ``outcome`` what happened to one run, typed.
"""
