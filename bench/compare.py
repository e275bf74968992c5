"""The one comparison loop: variants measured side by side, level by level, round after round.

A variant is whatever a study puts beside another: a container of a configuration, the same
configuration with an environment override, the engine's socket against the front, a route
against another. Every round visits every level and, at each level, every variant in turn, so
drift in a noisy machine's load weighs on all of them alike; a study takes each figure over the
rounds (a median, a ratio per round).

The order turns so that no variant always goes first:
- `rotate`: at round r and the i-th level the variants start at the (r + i)-th (any number);
- `abba`: forward in even rounds, backward in odd ones (two variants: A B, B A; each leads and
  each follows as often, so an even number of rounds is fair).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterator, Sequence
from typing import Literal, TypeVar

V = TypeVar("V", bound=Hashable)
L = TypeVar("L", bound=Hashable)
T = TypeVar("T")

Order = Literal["rotate", "abba"]
# Each variant's measurements at each level, one per round, in round order.
Measured = dict[V, dict[L, list[T]]]


def turns(
    variants: Sequence[V], levels: Sequence[L], rounds: int, order: Order = "rotate"
) -> Iterator[tuple[int, L, V]]:
    """(round, level, variant) in the order they are measured."""
    names = list(variants)
    for round_number in range(rounds):
        for level_number, level in enumerate(levels):
            if order == "abba":
                ordered = names if round_number % 2 == 0 else names[::-1]
            else:
                turn = (round_number + level_number) % len(names)
                ordered = names[turn:] + names[:turn]
            for name in ordered:
                yield round_number, level, name


def arranged(
    results: dict[tuple[int, L, V], T], variants: Sequence[V], levels: Sequence[L]
) -> Measured:
    """Each turn's result under its variant and level, in round order."""
    measured: Measured = {name: {level: [] for level in levels} for name in variants}
    for (_, level, name), result in results.items():
        measured[name][level].append(result)
    return measured


def compare(
    measure: Callable[[V, L, int], T],
    variants: Sequence[V],
    levels: Sequence[L],
    rounds: int,
    order: Order = "rotate",
) -> Measured:
    """`measure(variant, level, round)` for every turn."""
    results = {
        (number, level, name): measure(name, level, number)
        for number, level, name in turns(variants, levels, rounds, order)
    }
    return arranged(results, variants, levels)


async def compare_async(
    measure: Callable[[V, L, int], Awaitable[T]],
    variants: Sequence[V],
    levels: Sequence[L],
    rounds: int,
    order: Order = "rotate",
) -> Measured:
    """`compare` for a measurement that is awaited (requests over HTTP)."""
    results = {}
    for number, level, name in turns(variants, levels, rounds, order):
        results[number, level, name] = await measure(name, level, number)
    return arranged(results, variants, levels)
