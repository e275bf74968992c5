"""P-EAGLE under the GPU's scheduling mode, on the CPU build: asynchronous scheduling (on by
default for P-EAGLE on a GPU, off on the CPU platform) kept on by the test-only switch
(harness/site/cpu_async_scheduling.py), with the K-by-batch-size schedule of the `scheduled`
container (K=7 alone, 3 at two requests, 1 at three or four, none from five). The step
after next is scheduled before this step's drafts exist there, so these are the GPU path's
scheduler, runner and proposer, less CUDA. Without the switch the engine runs synchronously
and the first test fails."""

from __future__ import annotations

import httpx

from tests.support.containers import SCHEDULED_CONFIG
from tests.support.schedule_load import (
    assert_greedy_answers_equal_across_the_schedule,
    payload,
    tokens,
)
from tests.support.schemas import WEATHER

SCHEDULE = SCHEDULED_CONFIG["num_speculative_tokens_per_batch_size"]
LARGEST_K = SCHEDULED_CONFIG["num_speculative_tokens"]
NAMED_CALL = {
    "messages": [{"role": "user", "content": "What is the weather in Lima?"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}],
    "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    "max_tokens": 96,
    "temperature": 0,
}


def test_the_engine_schedules_asynchronously(asynchronous):
    assert "asynchronous scheduling on, as vLLM chose it" in asynchronous.log_text()


def test_greedy_answers_equal_the_targets_across_every_range_of_the_schedule(asynchronous, plain):
    assert_greedy_answers_equal_across_the_schedule(asynchronous, plain, SCHEDULE)


def test_one_request_alone_drafts_the_largest_k_and_drafts_are_accepted(asynchronous):
    before = {
        name: asynchronous.metric(f"vllm:spec_decode_{name}_total")
        for name in ("num_drafts", "num_draft_tokens", "num_accepted_tokens")
    }
    tokens(asynchronous.url, payload(0))
    drafts, drafted, accepted = (
        asynchronous.metric(f"vllm:spec_decode_{name}_total") - value
        for name, value in before.items()
    )
    assert drafts > 0 and drafted == LARGEST_K * drafts
    assert accepted > 0


def test_a_tool_call_under_the_grammar_equals_the_targets(asynchronous, plain):
    def call(container) -> list:
        answer = httpx.post(f"{container.url}/invocations", json=NAMED_CALL, timeout=120)
        assert answer.status_code == 200, answer.text
        return answer.json()["choices"][0]["message"]["tool_calls"]

    calls = call(asynchronous)
    assert [c["function"]["name"] for c in calls] == ["get_weather"]
    assert [c["function"] for c in calls] == [c["function"] for c in call(plain)]
