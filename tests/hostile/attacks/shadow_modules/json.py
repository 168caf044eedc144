"""Shadow of 'json': if this is ever imported, the grader imported student code."""
import os
os._exit(77)
