"""Tests of serving/preflight/, one module per module; the helpers are in
tests/support/preflight.py."""
