"""gpu_check.outcomes, the report `make gpu-check` prints, read off real engines here: the
speculation counters and per-position drafts from a P-EAGLE container's /metrics, the
scheduling mode from the asynchronous container's log, and a verdict that fails on any
answer that differs from no speculation's."""

from __future__ import annotations

import httpx

from gpu_check import outcomes


def test_the_counters_and_positions_are_read_from_metrics(peagle):
    httpx.post(
        f"{peagle.url}/invocations",
        json={"prompt": "def fibonacci(n):", "max_tokens": 24, "temperature": 0},
        timeout=120,
    ).raise_for_status()
    found = outcomes.spec_metrics(httpx.get(f"{peagle.url}/metrics").text)
    assert found["num_drafts"] > 0 and found["num_draft_tokens"] >= found["num_drafts"]
    assert found["num_accepted_tokens"] >= 0
    # K=3: every draft has a first position, fewer reach the third (a request's last steps
    # draft only what its max_tokens leaves), none a fourth; the positions add up.
    positions = [found.get(f"num_draft_tokens_per_pos[{p}]", 0.0) for p in range(4)]
    assert positions[0] == found["num_drafts"]
    assert positions[0] >= positions[1] >= positions[2] > 0 and positions[3] == 0
    assert sum(positions) == found["num_draft_tokens"]


def test_the_engine_mode_says_asynchronous_scheduling(asynchronous, plain):
    assert "async scheduling on (CPU test switch)" in outcomes.engine_mode(asynchronous.log_text())
    # The CPU platform turns it off silently without the switch: nothing claims it is on.
    assert "CPU test switch" not in outcomes.engine_mode(plain.log_text())


def outcome(name: str, answer: str, drafts: float) -> outcomes.Outcome:
    found = outcomes.Outcome(name, None)
    found.answers = {(1, 0): "same", (3, 1): answer}
    found.metrics = {"num_drafts": drafts, "num_accepted_tokens": drafts}
    found.tool_call = "valid: get_weather({'city': 'Lima', 'unit': 'C'})"
    return found


def test_the_verdict_fails_on_one_differing_answer_and_the_report_shows_it():
    same = [outcome("none", "text", 0), outcome("P-EAGLE K=3", "text", 10)]
    assert outcomes.verdict(same, kernels_exit=0)
    assert not outcomes.verdict(same, kernels_exit=1)
    differing = [outcome("none", "text", 0), outcome("P-EAGLE K=3", "other", 10)]
    assert not outcomes.verdict(differing, kernels_exit=0)
    text = outcomes.report(differing, "kernels: ALL EQUAL", "## GPU check")
    assert "| P-EAGLE K=3 | 0 s | 1/2 | 10 | 2.00 |" in text
    assert "P-EAGLE K=3, 3 clients, prompt 1: 'other' vs none 'text'" in text
