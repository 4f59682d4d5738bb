"""A module that takes 3 s to import, which a task imports while it runs: the worker template
learns it and rebuilds with it, and test_popen_pool_template.py checks that a quick task of
another module does not wait those 3 s."""

import time

IMPORT_S = 3.0
time.sleep(IMPORT_S)
