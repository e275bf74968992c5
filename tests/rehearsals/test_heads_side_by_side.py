"""Heads side by side: the rows, the rounds and the table the retraining loop reports."""

from __future__ import annotations

from rehearsals import heads_side_by_side, retrain


def test_the_retrain_table_compares_the_heads_on_the_same_workload_and_concurrency():
    base = {"draft": 70, "accepted": 30, "tokens": 40, "seconds": 2, "by_position": [0.9, 0.5]}
    tuned = {"draft": 70, "accepted": 50, "tokens": 60, "seconds": 2, "by_position": [1.0, 0.75]}
    rows = [
        heads_side_by_side.row("prose", 1, "base", base, 7),
        heads_side_by_side.row("prose", 1, "fine-tuned", tuned, 7),
    ]
    # 10 verify steps of K=7: 1 + 30/10 = 4.0 and 1 + 50/10 = 6.0 tokens per step.
    assert [row["mean_acceptance_length"] for row in rows] == [4.0, 6.0]
    text = retrain.table({"side_by_side": rows})
    assert "prose, c=1: fine-tuned / base acceptance length 1.50x, output tok/s 1.50x" in text
    assert "| prose | 1 | fine-tuned | 6.0 | 1.00, 0.75 | 30.0 |" in text


def test_the_retrain_rounds_are_summed_and_each_rounds_ratio_to_no_speculation_shown():
    def counts(tokens: int, seconds: float, by_position: list[float]) -> dict:
        return {
            "draft": 14, "accepted": 7, "tokens": tokens, "seconds": seconds,
            "by_position": by_position,
        }  # fmt: skip

    tuned = heads_side_by_side.merged([counts(100, 1, [0.8, 0.4]), counts(100, 2, [0.6, 0.2])])
    alone = heads_side_by_side.merged([counts(100, 2, []), counts(100, 2, [])])
    rows = [
        heads_side_by_side.row("agent", 1, "base", tuned, 7),
        heads_side_by_side.row("agent", 1, "fine-tuned", tuned, 7),
        heads_side_by_side.row("agent", 1, heads_side_by_side.NO_SPECULATION, alone, 7),
    ]
    assert rows[1]["output_tokens_per_s"] == round(200 / 3, 1)
    assert rows[1]["acceptance_per_position"] == [0.7, 0.3]
    assert rows[1]["rounds_tokens_per_s"] == [100.0, 50.0]
    # The whole: 66.7 against 50 tok/s; round by round: 2.0x and 1.0x.
    assert "fine-tuned 1.33x (rounds 1.00-2.00)" in retrain.table({"side_by_side": rows})
