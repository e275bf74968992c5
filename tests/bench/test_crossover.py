"""bench crossover's choices (bench/envelope.py): the fastest K per load, the schedule that
follows it, and a config the container's own preflight accepts."""

from __future__ import annotations

from bench.envelope import (
    envelope,
    ratio_spread,
    schedule,
    speculative_config,
    table,
    verification_table,
)
from serving.preflight.batch_schedule import check_batch_schedule

LEVELS = (1, 2, 4, 8, 16, 32, 64)
# Medians shaped like the measurements: K=7 best alone, K=3 in the middle, no
# speculation at the top.
TOKENS_PER_S = {
    0: dict(zip(LEVELS, (60, 110, 200, 350, 600, 900, 1000), strict=True)),
    3: dict(zip(LEVELS, (110, 190, 300, 450, 640, 880, 940), strict=True)),
    7: dict(zip(LEVELS, (130, 200, 290, 380, 500, 700, 800), strict=True)),
}


def test_the_envelope_takes_the_fastest_k_and_no_speculation_where_it_wins():
    assert envelope(TOKENS_PER_S) == {1: 7, 2: 7, 4: 3, 8: 3, 16: 3, 32: 0, 64: 0}


def test_a_k_within_the_margin_of_no_speculation_is_not_worth_drafting():
    close = {0: {1: 100.0}, 3: {1: 102.0}}
    assert envelope(close, min_gain=0.03) == {1: 0}
    assert envelope(close, min_gain=0.0) == {1: 3}


def test_the_schedule_splits_between_levels_and_runs_to_max_num_seqs():
    best = {1: 7, 2: 7, 4: 5, 8: 3, 16: 3, 32: 0, 64: 0}
    assert schedule(best, 1024) == [[1, 2, 7], [3, 5, 5], [6, 22, 3], [23, 1024, 0]]
    assert schedule(best, 16) == [[1, 2, 7], [3, 5, 5], [6, 16, 3]]


def test_the_config_to_deploy_passes_the_containers_preflight():
    ranges = schedule(envelope(TOKENS_PER_S), 1024)
    config = speculative_config(ranges)
    assert config == {
        "method": "eagle3",
        "num_speculative_tokens": 7,
        "parallel_drafting": True,
        "num_speculative_tokens_per_batch_size": [[1, 2, 7], [3, 22, 3], [23, 1024, 0]],
    }
    errors: list[str] = []
    check_batch_schedule(config, (), trained_positions=8, errors=errors)
    assert errors == []


def test_one_k_everywhere_needs_no_schedule_and_none_anywhere_no_speculation():
    assert speculative_config([[1, 1024, 5]]) == {
        "method": "eagle3",
        "num_speculative_tokens": 5,
        "parallel_drafting": True,
    }
    assert speculative_config([[1, 1024, 0]]) is None


def test_the_table_shows_each_ks_ratio_with_its_rounds_range():
    rounds = {0: {1: [60.0, 62.0]}, 7: {1: [126.0, 136.4]}}
    medians = {k: {1: sum(v[1]) / 2} for k, v in rounds.items()}
    text = table(medians, ratio_spread(rounds), {1: 7})
    assert "| peagle-k7 | **131.2 (2.15x, 2.10-2.20)** |" in text


def test_the_verification_compares_the_schedule_with_each_in_the_same_rounds():
    rounds = {
        "none": {1: [100.0, 110.0], 64: [1000.0, 1000.0]},
        "peagle-k3": {1: [150.0, 150.0], 64: [1100.0, 1000.0]},
        "peagle-k7": {1: [200.0, 200.0], 64: [800.0, 900.0]},
        "schedule": {1: [190.0, 220.0], 64: [1000.0, 990.0]},
    }
    text = verification_table(rounds, ["peagle-k3", "peagle-k7"])
    assert "| 1 | 105.0 | 150.0 | 200.0 | 205.0 | 1.95x (1.90-2.00) | 1.02x (0.95-1.10) " in text
    # The best fixed K is chosen per level: K=7 alone, K=3 at 64 clients.
    assert "(peagle-k7) |" in text.splitlines()[2]
    assert "| 64 | 1000.0 | 1050.0 | 850.0 | 995.0 | 0.99x (0.99-1.00) | 0.95x" in text
    assert text.splitlines()[3].endswith("(peagle-k3) |")
