"""The one comparison loop: every variant at every level in every round, no variant always
first."""

import asyncio
from collections import Counter

from bench.compare import compare, compare_async, turns


def test_rotation_lets_each_variant_lead_as_often_at_each_level():
    order = list(turns(["none", "k3", "k7"], [1, 4], rounds=3))
    assert len(order) == 3 * 2 * 3
    leaders = Counter(
        (level, name) for index, (_, level, name) in enumerate(order) if index % 3 == 0
    )
    assert leaders == {(level, name): 1 for level in (1, 4) for name in ("none", "k3", "k7")}


def test_abba_turns_two_variants_round_by_round():
    order = [name for _, _, name in turns(["direct", "front"], [8], rounds=4, order="abba")]
    assert order == ["direct", "front", "front", "direct"] * 2


def test_each_measurement_lands_under_its_variant_and_level_in_round_order():
    def measure(name, level, round_number):
        return f"{name}@{level}#{round_number}"

    measured = compare(measure, ["a", "b"], [1, 16], rounds=2)
    assert measured["b"][16] == ["b@16#0", "b@16#1"]

    async def awaited(name, level, round_number):
        return measure(name, level, round_number)

    assert asyncio.run(compare_async(awaited, ["a", "b"], [1, 16], rounds=2)) == measured
