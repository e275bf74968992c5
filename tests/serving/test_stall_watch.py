"""What counts as a stall, and how many restarts a window allows: the rules, on vLLM's own
metric lines. The real engine stalled and killed: tests/serving/test_self_healing.py."""

from __future__ import annotations

import asyncio

from serving.restarts import RestartBudget, describe_exit
from serving.stall_watch import StallWatch, read


def metrics(running: int, waiting: int, steps: int, prompt: int, generated: int) -> str:
    labels = '{engine="0",model_name="demo"}'
    return "\n".join(
        [
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{labels} {running}.0",
            f"vllm:num_requests_waiting{labels} {waiting}.0",
            'vllm:num_requests_waiting_by_reason{engine="0",reason="x"} 7.0',
            f"vllm:iteration_tokens_total_count{labels} {steps}.0",
            'vllm:iteration_tokens_total_bucket{engine="0",le="1.0"} 99.0',
            f"vllm:prompt_tokens_total{labels} {prompt}.0",
            f"vllm:generation_tokens_total{labels} {generated}.0",
            "",
        ]
    )


def watch(in_flight: int = 1, unanswered: int = 0) -> StallWatch:
    async def no_metrics() -> None:
        return None

    return StallWatch(60, no_metrics, lambda: in_flight, lambda: unanswered)


def test_the_lines_wanted_are_read_and_others_left():
    reading = read(metrics(2, 1, 10, 300, 40))
    assert (reading.running, reading.waiting) == (2, 1)
    assert reading.progress == (10, 300, 40)


def test_progress_however_slow_is_not_a_stall():
    stall = watch()
    assert stall.check(metrics(1, 0, 10, 300, 40)) is None
    assert stall.check(metrics(1, 0, 11, 300, 40)) is None  # one step: a long prefill
    assert stall.check(metrics(1, 0, 11, 300, 41)) is None


def test_work_without_progress_is_a_stall_and_no_work_is_none():
    stall = watch()
    assert stall.check(metrics(1, 2, 10, 300, 40)) is None
    seen = stall.check(metrics(1, 2, 10, 300, 40))
    assert seen == "1 running and 2 waiting, generated tokens stuck at 40"
    assert stall.check(metrics(0, 0, 10, 300, 40)) is None


def test_a_request_sent_with_no_answer_is_work_that_the_gauges_miss():
    # A core wedged while idle never steps again, so its gauges keep reading 0 and 0.
    stall = watch(unanswered=1)
    assert stall.check(metrics(0, 0, 10, 300, 40)) is None
    seen = stall.check(metrics(0, 0, 10, 300, 40))
    assert (
        seen == "0 running and 0 waiting, 1 sent with no answer begun, generated tokens stuck at 40"
    )


def test_metrics_that_do_not_answer_count_only_with_requests_in_flight():
    assert "did not answer with 3 request(s)" in watch(in_flight=3).check(None)
    assert watch(in_flight=0).check(None) is None


def test_watch_returns_after_the_window_without_progress():
    now = [0.0]
    texts = iter([metrics(1, 0, 5, 9, 9)] * 100)

    async def engine_metrics() -> str:
        now[0] += 1.0
        return next(texts)

    stall = StallWatch(6, engine_metrics, lambda: 1, lambda: 0, clock=lambda: now[0])
    stall.poll_seconds = 0
    seen = asyncio.run(asyncio.wait_for(stall.watch(), 5))
    assert seen.startswith("the engine made no progress for 6 s")


def test_the_budget_allows_so_many_restarts_per_window():
    budget = RestartBudget(2, window_seconds=900)
    assert budget.take(0) and budget.take(100)
    assert not budget.take(200)
    assert "2 restart(s) in the last 900 s" in budget.spent()
    assert budget.take(901)  # the first has left the window
    assert not RestartBudget(0, 900).take(0)


def test_an_end_is_described_by_code_or_signal():
    assert describe_exit(1) == "exited with code 1"
    assert describe_exit(-9) == "was killed by signal SIGKILL"
    assert describe_exit(None) == "is gone"
