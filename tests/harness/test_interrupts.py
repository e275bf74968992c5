"""The tests' own rule for interrupting a request (tests/support/interrupts.py): an attempt
foiled by the machine is said and made again; only all attempts foiled fail the test."""

from __future__ import annotations

import pytest

from tests.support.interrupts import Background, interrupted


def test_a_foiled_attempt_is_reported_and_made_again():
    outcomes = iter(["the request ran whole before SIGKILL landed", None])
    with pytest.warns(UserWarning, match="attempt 1: the request ran whole before SIGKILL"):
        interrupted("a killed engine", lambda: next(outcomes))


def test_every_attempt_foiled_fails_with_each_reason():
    with pytest.raises(pytest.fail.Exception) as failed, pytest.warns(UserWarning):
        interrupted("a stalled engine", lambda: "it ran whole", attempts=2)
    assert "attempt 1: it ran whole" in str(failed.value)
    assert "attempt 2: it ran whole" in str(failed.value)


def test_a_background_call_gives_back_its_value_or_its_error():
    done = Background(lambda: 42)
    done.join(5)
    assert done.value() == 42 and done.ended_at is not None
    failed = Background(lambda: 1 / 0)
    failed.join(5)
    with pytest.raises(ZeroDivisionError):
        failed.value()
