"""Unit functions for tests/test_sweep.py, in a module that spawned workers import quickly."""

import os
import time


def slow_then(i, delay):
    time.sleep(delay)
    return ("unit", i, os.getpid())


def die(code):
    os._exit(code)
