"""Kernels with published TPU timings, and the table of those timings: the
speed model's fit points and its validation points (see points.py)."""
