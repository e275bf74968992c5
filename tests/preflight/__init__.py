"""Tests of serving/preflight/, one module per module; the helpers are in support.py."""

import pytest

# Helpers that assert get pytest's detailed failure messages too.
pytest.register_assert_rewrite("preflight.support")
