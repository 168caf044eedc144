"""Not UTF-8: Latin-1 bytes in a comment (café) and a stray 0xff byte."""
# ÿþ
from honest_add import honest_add as add
