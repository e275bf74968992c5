"""The benchmark and load tools against the real P-EAGLE container (MAX_CONCURRENT_REQUESTS=8)."""

from __future__ import annotations

import asyncio
import json

from bench.__main__ import main
from bench.acceptance import SpecCounters, acceptance_length, parse_counters
from bench.client import StreamTimer
from bench.load import run_load
from bench.prompts import load_payloads
from bench.report import COLUMNS

METRICS_TEXT = """\
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 15.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 30.0
"""


def test_acceptance_length_from_counters():
    before = SpecCounters(drafts=0, draft_tokens=0, accepted=0)
    assert acceptance_length(before, parse_counters(METRICS_TEXT)) == 2.5
    assert acceptance_length(before, before) is None  # nothing drafted: no speculation


def test_stream_timer_reads_split_events_and_usage():
    timer = StreamTimer(started=0.0)
    timer.feed(b'data: {"choices":[{"text":"a"}]}\n\ndata: {"choi', now=0.1)
    timer.feed(b'ces":[{"text":"bc"}]}\n\n', now=0.3)
    timer.feed(b'data: {"choices":[],"usage":{"completion_tokens":3}}\n\ndata: [DONE]\n\n', now=0.4)
    result = timer.finish(now=0.4)
    assert result.ok and result.ttft == 0.1 and result.output_tokens == 3
    assert result.itl == [0.3 - 0.1]
    assert abs(result.tpot - 0.1) < 1e-9


def test_benchmark_reports_every_column(peagle, tmp_path):
    code = main([
        "run", "--url", peagle.url, "--num-prompts", "4", "--max-tokens", "16",
        "--concurrency", "1,2", "--out-dir", str(tmp_path), "--name", "smoke",
    ])  # fmt: skip
    assert code == 0
    levels = json.loads((tmp_path / "smoke.json").read_text())["levels"]
    assert [level["concurrency"] for level in levels] == [1, 2]
    for level in levels:
        assert level["completed"] == 4 and level["failed"] == 0, level["errors"]
        assert level["output_tokens"] == 4 * 16
        assert level["output_tokens_per_s"] > 0 and level["request_throughput"] > 0
        assert level["output_tokens_per_s_per_request"] > 0
        assert 0 < level["ttft_ms_mean"] <= level["ttft_ms_p99"]
        assert 0 < level["tpot_ms_mean"] and 0 < level["itl_ms_mean"] <= level["itl_ms_p99"]
        # P-EAGLE drafts on every step; random weights may accept none, so >= 1.
        assert level["acceptance_length"] >= 1.0
    table = (tmp_path / "smoke.md").read_text()
    for _, title, _ in COLUMNS:
        assert title in table
    assert (tmp_path / "smoke.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_load_loses_nothing(peagle):
    payloads = load_payloads(num_prompts=8)
    result = asyncio.run(
        run_load(peagle.url, payloads, clients=4, duration=4, stream_fraction=0.5, max_tokens=8)
    )
    assert result["lost"] == 0, result["error_samples"]
    assert result["other_errors"] == 0, result["error_samples"]
    assert result["completed"] > 0
    assert result["sent"] == result["completed"] + result["refused_429"] + result["refused_503"]
    assert result["pings"] > 0 and result["ping_ms_p99"] is not None


def test_load_with_big_bodies_answers_every_request(peagle, tmp_path):
    """A few clients post 5 MiB chat payloads for a few seconds while /ping is timed: every
    request gets an HTTP answer (vLLM's 400 for a prompt longer than its context counts), none
    a server error, and the /ping percentiles are reported. The latency goal is for the
    benchmark to show (`make load-bodies`), not for a timed test."""
    code = main([
        "load", "--url", peagle.url, "--body-mb", "5", "--clients", "3", "--duration", "3",
        "--out-dir", str(tmp_path),
    ])  # fmt: skip
    result = json.loads((tmp_path / "load-bodies.json").read_text())
    assert code == 0 and result["lost"] == 0, result["error_samples"]
    assert result["body_bytes"] == 5 * 1024 * 1024
    assert result["answered"] == result["sent"] > 0
    assert all(int(status) < 500 for status in result["statuses"]), result["statuses"]
    assert result["pings"] > 0
    assert None not in (result[f"ping_ms_{stat}"] for stat in ("p50", "p95", "p99", "max"))


def test_the_retrain_table_compares_the_heads_on_the_same_workload_and_concurrency():
    from bench import retrain

    base = {"draft": 70, "accepted": 30, "tokens": 40, "seconds": 2}
    tuned = {"draft": 70, "accepted": 50, "tokens": 60, "seconds": 2}
    rows = [
        retrain.row("prose", 1, "base", base, 7),
        retrain.row("prose", 1, "fine-tuned", tuned, 7),
    ]
    # 10 verify steps of K=7: 1 + 30/10 = 4.0 and 1 + 50/10 = 6.0 tokens per step.
    assert [row["mean_acceptance_length"] for row in rows] == [4.0, 6.0]
    text = retrain.table({"side_by_side": rows})
    assert "prose, c=1: fine-tuned / base acceptance length 1.50x, output tok/s 1.50x" in text
