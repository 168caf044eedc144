"""A traced program as data, both ways: ``schema`` (what a document may hold; no JAX),
``serial`` (program to document, in the tracer), ``rebuild`` (document to program, in
the grader's child), ``jaxprs`` (a jaxpr's shape across the supported releases).
"""
