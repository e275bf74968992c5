"""The training report's offline figures: the uniform and the walk acceptance, the text stats."""

from __future__ import annotations

import pytest
import torch

from model_data_sources.evaluation import (
    ends_in_loop,
    text_stats,
    uniform_acceptance,
    walk_acceptance,
)


def chains(rows: dict[int, list[int]]) -> dict[int, torch.Tensor]:
    return {anchor: torch.tensor(matches, dtype=torch.bool) for anchor, matches in rows.items()}


# One answer after a 3-token prompt: the first draft is made at anchor 2 (the prompt's last
# token; the prefill gives the token at 3).
MATCHES = [chains({2: [1, 1, 0], 3: [0, 0, 0], 4: [0, 1, 1], 5: [1, 0, 1], 6: [1, 1, 1]})]


def test_the_walk_drafts_again_after_the_accepted_tokens_and_the_targets_own():
    walk = walk_acceptance(MATCHES, torch.tensor([3]), k=3)
    # anchor 2 accepts 2 and moves to 5; anchor 5 accepts 1 and moves to 7, past the answer.
    assert walk.drafts == 2
    assert walk.acceptance_length == pytest.approx(1 + 3 / 2)
    assert walk.per_position == pytest.approx([1.0, 0.5, 0.0])


def test_the_walk_at_k_1_counts_only_the_first_draft_token():
    walk = walk_acceptance(MATCHES, torch.tensor([3]), k=1)
    # 2 -> 4 (accepted), 4 -> 5 (rejected), 5 -> 7 (accepted): 3 drafts, 2 accepted.
    assert walk.drafts == 3
    assert walk.acceptance_length == pytest.approx(1 + 2 / 3)


def test_the_walk_skips_the_hard_anchors_the_uniform_figure_counts():
    walk = walk_acceptance(MATCHES, torch.tensor([3]), k=3)
    accuracy, lengths = uniform_acceptance(MATCHES, depth=3)
    assert accuracy == pytest.approx([3 / 5, 3 / 5, 3 / 5])
    # leading matches per anchor: 2, 0, 0, 1, 3
    assert lengths[2] == pytest.approx(1 + 6 / 5)
    assert walk.acceptance_length != pytest.approx(lengths[2])


def test_an_answer_with_no_draft_on_the_greedy_path_is_an_error():
    with pytest.raises(ValueError, match="too short"):
        walk_acceptance([chains({7: [1, 1, 1]})], torch.tensor([3]), k=3)


def test_a_loop_is_a_tail_that_repeats_with_a_short_period():
    assert ends_in_loop(list(range(40)) + [5, 6, 7] * 22)
    assert not ends_in_loop(list(range(100)))
    assert not ends_in_loop([1] * 10)  # too short to tell


def test_text_stats_reads_only_the_answers():
    prompt = [9, 9, 9, 9, 9, 9]
    looping = prompt + [1, 2, 3] * 30
    varied = prompt + list(range(100, 190))
    stats = text_stats([looping, varied], [6, 6])
    assert stats["answers"] == 2
    assert stats["loop_rate"] == 0.5
    # the loop has 3 distinct 4-grams of 87; the varied answer 87 of 87
    assert stats["distinct_4"] == round(90 / 174, 3)
    assert stats["repeated_4"] == round(84 / 174, 3)
