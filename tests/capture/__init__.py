"""Tests of capture/, the export of captured requests; the helpers are in
tests/support/capture.py."""
