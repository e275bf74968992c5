"""Thousands of fuzzed bodies of every kind the front takes (harness/fuzz.py), against the
P-EAGLE container: each is answered 200 or a 4xx that says what is wrong, the container stays
up, and its log shows no traceback."""

from __future__ import annotations

import asyncio
import json

from harness import fuzz

SEED = 68
BODIES = 2_000


def test_no_fuzzed_body_is_answered_5xx_or_logs_a_traceback(peagle):
    log_before = len(peagle.log_text())
    outcomes = asyncio.run(fuzz.run(peagle.url, SEED, BODIES, clients=4, timeout=120))
    assert len(outcomes) == BODIES
    bad = [outcome for outcome in outcomes if not 200 <= outcome.status < 500]
    assert not bad, "\n".join(
        f"#{o.case.number} {o.case.kind} {o.case.path} ({o.case.mutation}): {o.status} {o.text}"
        for o in bad[:10]
    )
    refused = [outcome for outcome in outcomes if outcome.status >= 400]
    # Every kind of mistake is met, and each refusal says what is wrong.
    assert len(refused) > BODIES / 4
    for outcome in refused:
        message = error_message(outcome.text)
        assert message.strip(), f"#{outcome.case.number}: {outcome.status} {outcome.text}"
    assert len({o.status for o in outcomes}) >= 3  # 200 and several 4xx
    assert peagle.ping() == 200
    log = peagle.log_text()[log_before:]
    assert "Traceback" not in log, log[log.index("Traceback") - 2000 :][:5000]


def error_message(text: str) -> str:
    """The message of an error answer: OpenAI's, SageMaker's or a JSON Lines record's."""
    try:
        answer = json.loads(text.splitlines()[0] if text else "")
    except ValueError:
        return text  # a text answer (a truncated one too) is its own message
    if isinstance(answer, dict):
        error = answer.get("error", answer)
        if isinstance(error, dict):
            return str(error.get("message") or error.get("detail") or "")
        return str(error or answer.get("message") or answer.get("detail") or "")
    return text
