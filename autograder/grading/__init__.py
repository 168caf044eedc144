"""Grading one submission, with no JAX in this process.

``grade`` runs the pipeline and builds one ``report.Report``; ``sweep`` grades one
submission over many run keys. The stages below it, each a folder:

- ``run/``: the plan of every child run, its schedule, the submission's files, the
  inputs and their draws, fills, time limits, and the trace and run phases that
  talk to the children;
- ``probes/``: the checks that expose what each interpreter rung cannot see, one
  module each, registered in ``probes/__init__``;
- ``judge/``: outcomes to findings and scores: comparison, diagnosis, where a
  finding is (``regions``), scoring, the problems a report opens with, what a
  secret case may show, notes no rung confirms, and how numbers are written;
- ``identity/``: which kernel a program is: its canonical form, normalised
  programs, its numbers, where its calls are in the file, and likeness for pairs.

Layers (import-linter): grade and sweep > report and probes > judge > run > identity.
The finding type and catalogue live in ``autograder.findings``, below everything.
"""
