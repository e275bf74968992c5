"""The test suite. Its helpers are one package, tests/support, imported one way:
`from tests.support.MODULE import NAME`; a test module imports no other test module.
The containers themselves come from harness/, which the benchmark uses too."""

import pytest

# Helpers that assert get pytest's detailed failure messages too.
pytest.register_assert_rewrite("tests.support")
