"""Shadow of 'numpy': if this is ever imported, the grader imported student code."""
import os
os._exit(77)
