"""Which of the checkpoints tried the job writes: the best on the train channel's held-out
prompts among those that keep the replay channel's acceptance within replay_max_loss of the
start head's; when none does, the one that loses least there. (vLLM's figures are given here;
the training-job tests measure real ones.)"""

from __future__ import annotations

from pathlib import Path

from training.choice import Candidate, Guard, choose


def candidate(epoch: str, train: float | None, replay: float | None) -> Candidate:
    measured = {}
    if train is not None:
        measured["train"] = {"mean_acceptance_length": train}
    if replay is not None:
        measured["replay"] = {"mean_acceptance_length": replay}
    return Candidate(Path(epoch), Path("heads") / epoch, {}, measured)


def test_the_best_on_the_new_traffic_among_those_that_keep_the_old() -> None:
    tried = [candidate("9", 7.05, 5.30), candidate("19", 7.20, 5.15), candidate("4", 7.40, 4.90)]
    guard = Guard(start=5.38, max_loss=0.05)  # at least 5.111 on replay

    chosen, kept = choose(tried, guard)

    assert (chosen.checkpoint.name, kept) == ("19", True)
    assert guard.floor is not None and round(guard.floor, 3) == 5.111


def test_when_none_keeps_the_old_traffic_the_one_that_loses_least_is_written() -> None:
    tried = [candidate("9", 7.05, 4.95), candidate("19", 7.20, 4.80)]

    chosen, kept = choose(tried, Guard(start=5.38, max_loss=0.05))

    assert (chosen.checkpoint.name, kept) == ("9", False)


def test_without_a_start_head_on_replay_the_best_on_the_new_traffic() -> None:
    tried = [candidate("9", 7.05, 5.30), candidate("19", 7.20, 3.00)]

    chosen, kept = choose(tried, Guard(start=None, max_loss=0.05))

    assert (chosen.checkpoint.name, kept) == ("19", True)


def test_of_equals_and_unmeasured_heads_the_first_tried_wins() -> None:
    tried = [candidate("9", None, None), candidate("19", None, None)]
    assert choose(tried, Guard(start=None, max_loss=0.05))[0].checkpoint.name == "9"
    tried = [candidate("9", 7.0, None), candidate("19", 7.0, None)]
    assert choose(tried, Guard(start=None, max_loss=0.05))[0].checkpoint.name == "9"
