"""The benchmark and load tools against the real P-EAGLE container (MAX_CONCURRENT_REQUESTS=8)."""

from __future__ import annotations

import asyncio
import json

import pytest

from bench.__main__ import main
from bench.acceptance import (
    SpecCounters,
    acceptance_length,
    acceptance_per_position,
    parse_counters,
)
from bench.client import StreamTimer, json_result
from bench.configuration import default_configuration
from bench.load import run_load
from bench.report import COLUMNS
from bench.side_by_side import FIGURES, failures, medians
from bench.stats import digest, summarize
from bench.sweep import finalists, write_report
from harness.configurations import DEMO_SCHEDULE
from harness.locations import QUICK_DEMO_ROOT
from serving import paths
from tests.support.containers import build_demo_pair
from workloads.prompts import load_payloads

PNG = b"\x89PNG\r\n\x1a\n"

# vLLM 0.32's /metrics (prometheus_client's text format) for K=3 on two engines (data
# parallel): engine 0 drafted 10 times, engine 1 twice. The front's own gauge with a
# position label follows, as on the container's /metrics, and must not be counted.
METRICS_TEXT = """\
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 2.0
# HELP vllm:spec_decode_num_drafts_created Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_created gauge
vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7e+09
vllm:spec_decode_num_drafts_created{engine="1",model_name="m"} 1.7e+09
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 30.0
vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="m"} 6.0
# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 15.0
vllm:spec_decode_num_accepted_tokens_total{engine="1",model_name="m"} 3.0
# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 8.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 5.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 2.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="0"} 2.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="1"} 1.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="2"} 0.0
# HELP vllm:spec_decode_num_accepted_tokens_per_pos_created Accepted tokens per draft position.
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_created gauge
vllm:spec_decode_num_accepted_tokens_per_pos_created{engine="0",model_name="m",position="0"} 1.7e+09
# TYPE serving_spec_decode_position_acceptance_rate gauge
serving_spec_decode_position_acceptance_rate{position="0"} 0.8333333333333334
"""


def test_acceptance_length_from_counters():
    before = SpecCounters(drafts=0, draft_tokens=0, accepted=0)
    assert acceptance_length(before, parse_counters(METRICS_TEXT)) == 2.5
    assert acceptance_length(before, before) is None  # nothing drafted: no speculation


def test_acceptance_per_position_is_the_runs_share_of_drafts_at_each_position():
    before = SpecCounters(
        drafts=4, draft_tokens=12, accepted=6, accepted_by_position={0: 4, 1: 2, 2: 0}
    )
    after = parse_counters(METRICS_TEXT)
    assert after.accepted_by_position == {0: 10.0, 1: 6.0, 2: 2.0}
    # Over the run: 8 drafts; positions 1..3 accepted 6, 4 and 2 more times.
    rates = acceptance_per_position(before, after)
    assert rates == [0.75, 0.5, 0.25]
    assert sum(rates) == pytest.approx(acceptance_length(before, after) - 1)


def test_no_acceptance_per_position_without_drafts():
    reading = parse_counters(METRICS_TEXT)
    assert acceptance_per_position(reading, reading) is None  # nothing drafted in between
    assert acceptance_per_position(None, reading) is None  # /metrics unreachable
    plain = parse_counters("# no speculation: vLLM exports no spec-decode counters\n")
    assert acceptance_per_position(plain, plain) is None


def level(concurrency: int, tokens_per_s: float, per_position: list[float] | None) -> dict:
    return {
        "concurrency": concurrency,
        "completed": 4,
        "output_tokens_per_s": tokens_per_s,
        "acceptance_length": None if per_position is None else 1 + sum(per_position),
        "acceptance_per_position": per_position,
    }


def test_the_sweep_report_shows_acceptance_per_draft_position(tmp_path):
    runs = {
        "none": [level(1, 10.0, None), level(4, 30.0, None)],
        "peagle-k3": [level(1, 25.0, [0.81, 0.62, 0.4]), level(4, 70.0, [0.8, 0.6, 0.39])],
        "peagle-k5": [level(1, 27.0, [0.8, 0.6, 0.41, 0.3, 0.2]), level(4, 75.0, None)],
    }
    described = {
        "none": {"method": "none"},
        "peagle-k3": {"method": "peagle", "k": 3},
        "peagle-k5": {"method": "peagle", "k": 5},
    }
    text = write_report(tmp_path, runs, described, minutes=1.0)
    assert (tmp_path / "sweep.md").read_text() == "# Configuration sweep\n\n" + text
    section = text.split("## Acceptance per draft position\n")[1].split("\n\nSweep took")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert rows == [
        "| configuration | concurrency | pos. 1 | pos. 2 | pos. 3 | pos. 4 | pos. 5 |",
        "| peagle-k3 | 1 | 0.81 | 0.62 | 0.40 | - | - |",
        "| peagle-k3 | 4 | 0.80 | 0.60 | 0.39 | - | - |",
        "| peagle-k5 | 1 | 0.80 | 0.60 | 0.41 | 0.30 | 0.20 |",
    ]  # no row for no speculation, nor for a level whose counters were unreachable
    assert (tmp_path / "sweep-positions.png").read_bytes()[:8] == PNG
    assert (tmp_path / "sweep.png").read_bytes()[:8] == PNG


def test_a_sweep_without_speculation_says_so_instead_of_an_empty_table(tmp_path):
    text = write_report(
        tmp_path, {"none": [level(1, 10.0, None)]}, {"none": {"method": "none"}}, 0.5
    )
    assert "## Acceptance per draft position" in text
    assert "No configuration drafted tokens." in text
    assert (tmp_path / "sweep-positions.png").read_bytes()[:8] == PNG


def agreeing_level(concurrency: int, digests: list[str]) -> dict:
    return level(concurrency, 10.0, None) | {"output_digests": digests}


def test_the_sweep_report_shows_which_greedy_answers_differ_between_configurations(tmp_path):
    runs = {
        "none": [agreeing_level(1, ["", "b", "c"]), agreeing_level(4, ["a", "b", "c"])],
        "eagle3-k3": [agreeing_level(1, ["a", "b", "c"]), agreeing_level(4, ["a", "x", "c"])],
        "peagle-k3": [agreeing_level(1, ["a", "b", "c"]), agreeing_level(4, ["a", "b", ""])],
    }  # a failed request ("") counts as differing, and only against the one that failed
    described = {name: {"method": name.split("-")[0]} for name in runs}
    text = write_report(tmp_path, runs, described, minutes=1.0)
    section = text.split("## Greedy answers across configurations\n")[1].split("\n\nSweep")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert rows[1:] == [
        "| c=1 | 3 | 2 of 3 | 1 | failed: none |",
        "| c=4 | 3 | 1 of 3 | 2, 3 | eagle3-k3 (against none); failed: peagle-k3 |",
        "| all levels | 6 | 0 of 3 | 1, 2, 3 | eagle3-k3 c=4 (against none c=1); "
        "failed: none c=1, peagle-k3 c=4 |",
    ]


def test_the_sweep_report_counts_the_answers_that_ran_to_max_tokens(tmp_path):
    ended = {
        "none": [level(1, 10.0, None) | {"ran_to_max_tokens": 1}],
        "peagle-k3": [level(1, 25.0, [0.8, 0.6, 0.4]) | {"ran_to_max_tokens": 2}],
    }
    described = {"none": {"method": "none"}, "peagle-k3": {"method": "peagle", "k": 3}}
    text = write_report(tmp_path, ended, described, minutes=1.0)
    section = text.split("## Answers that ran to max_tokens\n")[1].split("\n\nSweep took")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert rows == ["| configuration | c=1 |", "| none | 1 of 4 |", "| peagle-k3 | 2 of 4 |"]
    # Under ignore_eos every answer is cut by design: no table that says only that.
    cut = {name: [run[0] | {"ran_to_max_tokens": 4}] for name, run in ended.items()}
    assert "ran to max_tokens" not in write_report(tmp_path, cut, described, minutes=1.0)


def test_the_sweeps_finalists_are_the_best_k_of_each_method_over_all_levels():
    runs = {
        "none": [level(1, 10.0, None), level(4, 30.0, None)],
        "eagle3-k3": [level(1, 20.0, None), level(4, 50.0, None)],
        "eagle3-k7": [level(1, 22.0, None), level(4, 40.0, None)],  # 1.0 + 0.8 < 0.91 + 1.0
        "peagle-k3": [level(1, 25.0, None), level(4, 70.0, None)],
        "peagle-k7": [level(1, 30.0, None), level(4, 69.0, None)],
    }
    described = {name: {"method": name.split("-")[0]} for name in runs}
    assert finalists(runs, described) == {
        "peagle": "peagle-k7",
        "eagle3": "eagle3-k3",
        "none": "none",
    }


def test_the_side_by_side_rounds_head_the_sweep_report_with_their_ratios(tmp_path):
    runs = {"none": [level(1, 10.0, None)], "peagle-k3": [level(1, 25.0, None)]}
    described = {"none": {"method": "none"}, "peagle-k3": {"method": "peagle", "k": 3}}

    def round_of(tokens_per_s: float, failed: int = 0) -> dict:
        figures = {figure: 100.0 for figure in FIGURES} | {"output_tokens_per_s": tokens_per_s}
        return figures | {"failed": failed, "errors": ["503 EngineUnavailable"] * bool(failed)}

    rounds = {
        "peagle": {1: [round_of(30.0), round_of(24.0), round_of(27.0, failed=1)]},
        "none": {1: [round_of(10.0), round_of(12.0), round_of(9.0)]},
    }
    side_by_side = {
        "rounds": 3,
        "finalists": {"peagle": "peagle-k3", "none": "none"},
        "medians": medians(rounds),
        "runs": rounds,
    }
    text = write_report(tmp_path, runs, described, 1.0, side_by_side)
    assert text.startswith("## Side by side: the best of each method, 3 rounds\n")
    section = text.split("\n## Output tokens/s")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert rows == [
        "| concurrency | P-EAGLE (peagle-k3) | no speculation (none) "
        "| P-EAGLE / no speculation (rounds) |",
        "| 1 | 27.0 | 10.0 | 2.70x (2.00-3.00) |",
    ]  # medians 27 and 10; per round 30/10, 24/12, 27/9
    assert "- peagle at c=1: 1 requests failed: 503 EngineUnavailable" in section


def test_chat_answers_are_read_from_deltas_and_messages():
    timer = StreamTimer(started=0.0)
    timer.feed(b'data: {"choices":[{"delta":{"role":"assistant"}}]}\n\n', now=0.1)
    timer.feed(b'data: {"choices":[{"delta":{"content":"de"}}]}\n\n', now=0.2)
    timer.feed(b'data: {"choices":[{"delta":{"content":"f"}}]}\n\ndata: [DONE]\n\n', now=0.3)
    assert timer.finish(now=0.3).text == "def"
    body = json.dumps({"choices": [{"message": {"content": "def f"}}], "usage": {}}).encode()
    assert json_result(200, body, 0.0, 0.5).text == "def f"


def test_tool_calls_are_part_of_an_answers_text_streamed_or_whole():
    # The sweep's lossless check compares texts: a call-only answer must not read as "".
    timer = StreamTimer(started=0.0)
    call = {"index": 0, "id": "c1", "function": {"name": "get_time", "arguments": ""}}
    timer.feed(b"data: " + json.dumps({"choices": [{"delta": {"tool_calls": [call]}}]}).encode()
               + b"\n\n", now=0.1)  # fmt: skip
    rest = {"index": 0, "function": {"arguments": '{"city": "Lima"}'}}
    timer.feed(b"data: " + json.dumps({"choices": [{"delta": {"tool_calls": [rest]}}]}).encode()
               + b"\n\ndata: [DONE]\n\n", now=0.2)  # fmt: skip
    assert timer.finish(now=0.2).text == 'get_time{"city": "Lima"}'
    whole = {
        "content": None,
        "tool_calls": [{**call, "function": {**call["function"], **rest["function"]}}],
    }
    body = json.dumps({"choices": [{"message": whole}], "usage": {}}).encode()
    assert json_result(200, body, 0.0, 0.5).text == 'get_time{"city": "Lima"}'


@pytest.mark.parametrize("workload", ["structured", "json", "agent"])
def test_the_structured_workload_is_answered_whole_and_ended_by_its_grammars(
    peagle, tmp_path, workload
):
    code = main([
        "run", "--url", peagle.url, "--workload", workload, "--num-prompts", "6",
        "--max-tokens", "48", "--concurrency", "2", "--out-dir", str(tmp_path), "--name", "s",
    ])  # fmt: skip
    assert code == 0
    (level,) = json.loads((tmp_path / "s.json").read_text())["levels"]
    assert level["completed"] == 6 and level["failed"] == 0, level["errors"]
    # No ignore_eos: the answers (calls and JSON) end before max_tokens.
    assert 0 < level["output_tokens"] < 6 * 48
    assert digest("") not in level["output_digests"]


def test_an_answer_cut_at_max_tokens_is_told_from_one_that_ended():
    timer = StreamTimer(started=0.0)
    timer.feed(b'data: {"choices":[{"delta":{"content":"555"},"finish_reason":null}]}\n\n', now=0.1)
    timer.feed(b'data: {"choices":[{"delta":{},"finish_reason":"length"}]}\n\n', now=0.2)
    timer.feed(b'data: {"choices":[],"usage":{"completion_tokens":2}}\n\ndata: [DONE]\n\n', now=0.3)
    assert timer.finish(now=0.3).finish_reason == "length"
    body = json.dumps({"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}]})
    ended = json_result(200, body.encode(), 0.0, 0.5)
    assert ended.finish_reason == "stop"
    assert summarize([timer.result, ended], 1.0, 1, None)["ran_to_max_tokens"] == 1


def test_stream_timer_reads_split_events_and_usage():
    timer = StreamTimer(started=0.0)
    timer.feed(b'data: {"choices":[{"text":"a"}]}\n\ndata: {"choi', now=0.1)
    timer.feed(b'ces":[{"text":"bc"}]}\n\n', now=0.3)
    timer.feed(b'data: {"choices":[],"usage":{"completion_tokens":3}}\n\ndata: [DONE]\n\n', now=0.4)
    result = timer.finish(now=0.4)
    assert result.ok and result.ttft == 0.1 and result.output_tokens == 3
    assert result.text == "abc"
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
        assert level["ran_to_max_tokens"] == 4  # ignore_eos: every answer is cut by design
        assert level["output_tokens_per_s"] > 0 and level["request_throughput"] > 0
        assert level["output_tokens_per_s_per_request"] > 0
        assert 0 < level["ttft_ms_mean"] <= level["ttft_ms_p99"]
        assert 0 < level["tpot_ms_mean"] and 0 < level["itl_ms_mean"] <= level["itl_ms_p99"]
        # P-EAGLE drafts on every step; random weights may accept none, so >= 1.
        assert level["acceptance_length"] >= 1.0
        # K=3: a rate per draft position, falling with position, adding up to the length.
        rates = level["acceptance_per_position"]
        assert len(rates) == 3 and 1.0 >= rates[0] >= rates[1] >= rates[2] >= 0.0
        assert sum(rates) == pytest.approx(level["acceptance_length"] - 1)
        # Every answer's text is kept (as a digest) for the sweep's lossless check.
        assert len(level["output_digests"]) == 4 and digest("") not in level["output_digests"]
    table = (tmp_path / "smoke.md").read_text()
    for _, title, _ in COLUMNS:
        assert title in table
    assert (tmp_path / "smoke.png").read_bytes()[:8] == PNG


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


def test_scrape_puts_the_scraped_load_beside_the_plain_one(peagle, tmp_path):
    """`bench scrape` at a tiny size: both variants run, each leads once, the scrape's
    latency is reported and nothing is lost."""
    code = main([
        "scrape", "--url", peagle.url, "--clients", "2", "--duration", "3", "--rounds", "2",
        "--num-prompts", "4", "--max-tokens", "8", "--out-dir", str(tmp_path),
    ])  # fmt: skip
    result = json.loads((tmp_path / "scrape.json").read_text())
    assert code == 0 and result["lost"] == 0
    scraped, alone = result["rounds"]["scraped"], result["rounds"]["not scraped"]
    assert len(scraped) == len(alone) == 2
    assert all(round_["scrapes"] >= 2 and not round_["scrape_failures"] for round_ in scraped)
    assert all("scrapes" not in round_ for round_ in alone)
    assert result["scrape_ms_p99_worst"] > 0 and len(result["throughput_ratios"]) == 2


def test_prefix_routing_reports_hit_rates_and_ttft_side_by_side(peagle, tmp_path):
    """`bench prefix` at a tiny size, both "containers" the shared one: every request is
    answered, and the tenants' shared system prompts hit vLLM's prefix cache."""
    code = main([
        "prefix", "--url", peagle.url, "--url", peagle.url, "--tenants", "2",
        "--prefix-words", "80", "--requests", "6", "--rounds", "2", "--out-dir", str(tmp_path),
    ])  # fmt: skip
    result = json.loads((tmp_path / "prefix.json").read_text())
    assert code == 0 and result["failed"] == 0
    for variant in ("prefix-aware", "random"):
        turns = result["turns"][variant]
        assert len(turns) == 2 and all(turn["answered"] == 6 for turn in turns)
        assert all(0 < turn["hit_rate"] <= 1 for turn in turns), turns
        assert all(turn["ttft_ms_p50"] > 0 for turn in turns)


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


def test_compare_reports_each_figure_against_the_first_variant_from_the_median_round():
    from bench.variants import table

    def level(tokens_per_s: float, latency: float, failed: int = 0) -> dict:
        return {
            "output_tokens_per_s": tokens_per_s,
            "ttft_ms_p50": None,
            "latency_ms_p50": latency,
            "latency_ms_p99": latency,
            "failed": failed,
            "errors": ["503 EngineUnavailable"] if failed else [],
        }

    measured = {
        "peagle:7": {1: [level(100, 50), level(90, 70), level(1, 60)]},
        "peagle:7+X=1": {1: [level(95, 61), level(99, 62), level(97, 600, failed=2)]},
    }
    summary = medians(measured)
    assert summary["peagle:7"][1]["output_tokens_per_s"] == 90  # one slow round does not move it
    assert summary["peagle:7+X=1"][1]["latency_ms_p50"] == 62
    text = table(summary, list(measured))
    assert "| peagle:7+X=1 / peagle:7 (peagle:7+X=1 - peagle:7) |" in text
    assert "| 1 | tok/s | 90.00 | 97.00 | 1.078x (+7.00) |" in text
    assert "| 1 | TTFT p50 ms | n/a | n/a | - |" in text  # no figure, said so
    assert "| 1 | failed requests | 0 | 2 | - |" in text
    assert failures(summary) == ["peagle:7+X=1 at c=1: 2 requests failed: 503 EngineUnavailable"]


def test_a_variant_is_a_configuration_with_the_settings_it_adds():
    from bench.variants import parse_variant

    variant = parse_variant("peagle:3+SERVING_CAPTURE_DIR=/tmp/c+SERVING_X=a=b", None)
    assert variant.configuration.k == 3 and variant.configuration.method == "peagle"
    assert variant.env == {"SERVING_CAPTURE_DIR": "/tmp/c", "SERVING_X": "a=b"}
    assert parse_variant("none", None).env == {}


def test_compare_refuses_variants_it_cannot_tell_apart_or_read(capsys):
    with pytest.raises(SystemExit) as refused:
        main(["compare", "peagle:3", "peagle:3+SERVING_CAPTURE_DIR"])
    assert "is not KEY=VALUE" in str(refused.value)
    with pytest.raises(SystemExit) as same:
        main(["compare", "peagle:3", "peagle:3"])
    assert "differ" in str(same.value)
    with pytest.raises(SystemExit) as port:
        main(["compare", "--port", "8080", "none", "peagle:3"])
    assert "free port" in str(port.value)


@pytest.mark.parametrize(
    ("depth", "expected"), [(8, DEMO_SCHEDULE), (7, DEMO_SCHEDULE), (4, "peagle:3")]
)
def test_the_default_configuration_drafts_no_deeper_than_the_head_was_trained(
    demo_root, tmp_path, depth, expected
):
    config = json.loads((paths.channel_dir(demo_root) / "config.json").read_text())
    trained = next(key for key in config if key.endswith("_trained"))
    (tmp_path / "config.json").write_text(json.dumps({**config, trained: depth}))
    assert default_configuration(tmp_path) == expected


@pytest.mark.engine
def test_the_sweep_measures_every_configuration_side_by_side(tmp_path):
    """`bench sweep` at a tiny size on the quick pair: both configurations up together,
    each level measured in every round, and the greedy answers identical across them."""
    build_demo_pair(QUICK_DEMO_ROOT, "--quick")  # `make test` has built it: checks its stamp
    code = main([
        "sweep", "--opt-ml-root", str(QUICK_DEMO_ROOT), "--configs", "none,peagle:3",
        "--num-prompts", "2", "--max-tokens", "16", "--concurrency", "1,2", "--rounds", "2",
        "--out-dir", str(tmp_path),
    ])  # fmt: skip
    assert code == 0
    document = json.loads((tmp_path / "sweep.json").read_text())
    assert set(document["rounds"]) == {"none", "peagle-k3"}
    for by_level in document["rounds"].values():
        assert all(len(by_level[level]) == 2 for level in ("1", "2"))
    assert document["side_by_side"]["finalists"] == {"peagle": "peagle-k3", "none": "none"}
    drafted = document["runs"]["peagle-k3"][0]["acceptance_length"]
    assert drafted is not None and drafted > 1.0
    # Lossless within a level (across levels a CPU's other batch sizes may round otherwise).
    report = (tmp_path / "sweep.md").read_text()
    assert "| c=1 | 2 | 2 of 2 | - | - |" in report and "| c=2 | 2 | 2 of 2 | - | - |" in report


@pytest.mark.engine
def test_the_lifecycle_times_a_start_a_stall_and_a_kill_against_bare_vllm(tmp_path):
    """`bench lifecycle --host-only` on the quick pair: the front and bare vLLM both start,
    and the stalled and the killed engine are each noticed (/ping 503) and back (200)."""
    build_demo_pair(QUICK_DEMO_ROOT, "--quick")  # `make test` has built it: checks its stamp
    code = main([
        "lifecycle", "--host-only", "--opt-ml-root", str(QUICK_DEMO_ROOT), "--config",
        "peagle:3", "--stall-seconds", "3", "--out-dir", str(tmp_path),
    ])  # fmt: skip
    assert code == 0
    host = json.loads((tmp_path / "lifecycle.json").read_text())["host"]
    assert host["cold_start_s"] > 0 and host["bare_vllm_cold_start_s"] > 0
    assert 0 < host["stall_to_ping_503_s"] < host["stall_to_ping_200_s"]
    assert 0 < host["kill_to_ping_503_s"] < host["kill_to_ping_200_s"]
