"""A traced program as data, both ways: ``schema`` (what a document may hold; no JAX),
``names`` (the primitives by name, and what each is outside a kernel; no JAX),
``serial`` and ``forms`` (program to document, in the tracer), ``decode``,
``rebuild`` and ``special`` (document to program, in the grader's child),
``registry`` (what the names stand for in this release, shared by both sides),
``jaxprs`` (a jaxpr's shape across the supported releases).
"""
