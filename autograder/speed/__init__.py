"""The TPU time model and the estimate of one grading (no JAX): ``model`` (every
constant with its source; an estimate, or ``NoEstimate`` with the reason) and
``grade`` (a grading's estimate against the solution's: curve and leaderboard).
"""
