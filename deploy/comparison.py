"""Two heads side by side: each figure with its noise, their ratio, and whether the window
tells them apart. The sources (CloudWatch, or two local containers' metrics) fill it in."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# A difference counts when it is larger than twice the standard error of the difference
# (about 95% confidence for a normal spread).
Z = 2.0


@dataclass(frozen=True)
class Figure:
    """A mean over the window, and its standard error (None when the window cannot say)."""

    mean: float
    noise: float | None = None

    def text(self, digits: int) -> str:
        if math.isnan(self.mean):
            return "-"
        value = f"{self.mean:.{digits}f}"
        return value if self.noise is None else f"{value} ± {self.noise:.{digits}f}"


MISSING = Figure(math.nan)


@dataclass(frozen=True)
class Row:
    label: str
    production: Figure
    shadow: Figure
    digits: int = 2
    # Which way is better: acceptance and tokens/s up, latency down; None for counts.
    higher_is_better: bool | None = True

    def ratio(self) -> float | None:
        if math.isnan(self.production.mean) or math.isnan(self.shadow.mean):
            return None
        if self.production.mean == 0:
            return None
        return self.shadow.mean / self.production.mean

    def beyond_noise(self) -> bool | None:
        """Whether the difference is larger than the window's noise (None: unknown)."""
        if self.ratio() is None or self.higher_is_better is None:
            return None
        if self.production.noise is None or self.shadow.noise is None:
            return None
        spread = math.hypot(self.production.noise, self.shadow.noise)
        return abs(self.shadow.mean - self.production.mean) > Z * spread

    def verdict(self) -> str:
        beyond = self.beyond_noise()
        if beyond is None:
            return "-"
        if not beyond:
            return "no"
        shadow_higher = self.shadow.mean > self.production.mean
        return "yes: shadow " + ("better" if shadow_higher == self.higher_is_better else "worse")


@dataclass(frozen=True)
class Comparison:
    window: str
    production: str  # what serves production: variant, head version, URL
    shadow: str
    rows: Sequence[Row]

    def headline(self) -> Row:
        return self.rows[0]

    def conclusion(self) -> str:
        row = self.headline()
        verdict = row.verdict()
        if verdict == "yes: shadow better":
            return f"The shadow's head is better ({row.label}, beyond the noise): promote it."
        if verdict == "yes: shadow worse":
            return f"The shadow's head is worse ({row.label}, beyond the noise): do not promote it."
        if verdict == "no":
            return (
                f"The heads are within this window's noise on {row.label}; let the shadow "
                "see more requests (a longer window or a larger --sample) before deciding."
            )
        return f"This window has no {row.label} for one of the heads: no requests reached it yet."

    def render(self) -> str:
        lines = [
            f"window: {self.window}",
            f"production: {self.production}",
            f"shadow: {self.shadow}",
            "",
            "| figure | production | shadow | shadow / production | difference beyond noise |",
            "|---|---|---|---|---|",
        ]
        for row in self.rows:
            ratio = row.ratio()
            lines.append(
                f"| {row.label} | {row.production.text(row.digits)} | "
                f"{row.shadow.text(row.digits)} | "
                f"{'-' if ratio is None else f'{ratio:.3f}'} | {row.verdict()} |"
            )
        lines += ["", self.conclusion(), ""]
        return "\n".join(lines)


def series_figure(values: Sequence[float]) -> Figure:
    """The mean of per-interval values, and its standard error across the intervals."""
    if not values:
        return MISSING
    mean = sum(values) / len(values)
    if len(values) < 2:
        return Figure(mean)
    variance = sum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return Figure(mean, math.sqrt(variance / len(values)))
