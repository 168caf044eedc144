"""Judging: what the runs' outcomes mean, as findings and scores (no JAX).

``compare`` and ``diagnosis`` (outcomes to findings), ``regions`` (where in an
operand), ``faces`` (one kernel for every check), ``scoring`` and ``problems``
(tests and the root causes a report opens with), ``secrecy`` (what a secret case
may show), ``unconfirmed`` (notes, not charges), ``figures`` (numbers as written).
"""
