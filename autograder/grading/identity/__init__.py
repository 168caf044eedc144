"""Which kernel a traced program is, read from its document (pure data, no JAX).

``canonical`` (what it computes, not how it is written), ``normal`` (programs that
compute the same thing, written one way), ``numbers`` (its numbers, and whether a
size changes only them), ``sources`` (where each call is in the file), ``likeness``
(what two submissions share, for the TA site's pairs).
"""
