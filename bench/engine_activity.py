"""The engine's activity read from its /metrics: requests running, tokens generated, idle, and
when generation stopped after a cancel."""

from __future__ import annotations

import asyncio
import time

import httpx

from serving.metrics import metric_total

RUNNING = "vllm:num_requests_running"
GENERATED = "vllm:generation_tokens_total"

# How long vLLM's generated-token count must stay still to call the generation stopped.
QUIET_SECONDS = 0.4
IDLE_POLL_SECONDS = 0.005


async def running(http: httpx.AsyncClient) -> float:
    return metric_total((await http.get("/metrics")).text, RUNNING)


async def wait_idle(http: httpx.AsyncClient, limit: float = 120) -> float:
    """Seconds until vLLM runs nothing."""
    began = time.perf_counter()
    while await running(http) > 0:
        if time.perf_counter() - began > limit:
            raise RuntimeError(f"vLLM still runs a request after {limit} s")
        await asyncio.sleep(IDLE_POLL_SECONDS)
    return time.perf_counter() - began


async def generated(http: httpx.AsyncClient) -> float:
    return metric_total((await http.get("/metrics")).text, GENERATED)


async def after_stop(http: httpx.AsyncClient, count: float, began: float) -> tuple[float, float]:
    """Seconds from `began` to the last change of vLLM's generated-token count (`count`
    just before; polled until it has stood still for QUIET_SECONDS), and to its running
    gauge reading 0. The first is when generation stopped, to within one scrape (tokens of
    the scrape before `began` count after it: an upper bound). The gauge is no such clock:
    an abort that leaves the engine idle publishes no step, so it reads 0 later."""
    last_change, zero_at = began, None
    while True:
        metrics = (await http.get("/metrics")).text
        now = time.perf_counter()
        value = metric_total(metrics, GENERATED)
        if value != count:
            count, last_change = value, now
        if zero_at is None and metric_total(metrics, RUNNING) == 0:
            zero_at = now
        if zero_at is not None and now - last_change > QUIET_SECONDS:
            return last_change - began, zero_at - began
