"""Feedback: findings and scored tests rendered for people (no JAX).

``render`` with the templates (text, Markdown, HTML), ``blockmaps/`` (a finding's
spatial evidence drawn), ``fixes`` (a problem's fix in the student's terms),
``repro`` (the commands that reproduce a test), ``glossary``, ``escaping`` (every
student-controlled string made inert), ``terminal``, ``staff``; ``results_format``
and ``results`` (Gradescope's results.json), ``tpu_timing`` (the T1 test).
Checks never format: everything here reads typed findings and reports.
"""
