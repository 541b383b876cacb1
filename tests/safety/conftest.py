"""The safety suite (make test-safety): the checkers on made-up histories, the partition and the
cleanup on the real network, and the short form of the harness (cases.short() on fixed seeds).
The closing `N passed, N failed` line comes from tests/conftest.py."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
