"""Reading interleaved rounds (``run.measure_jobs``: one round is every side once, back to back): ratios per round,
their median and spread, and a job's table of medians and ranges.

On a shared machine the load changes from one round to the next and weighs on the sides of one round alike, so a
ratio is taken within each round and the median of those is reported, with the middle half of the rounds beside it.
"""

from __future__ import annotations

import statistics

Runs = list[tuple[float, float]]
"""One side's (wall, CPU) seconds, one pair per round."""


def round_ratios(over: Runs, under: Runs, which: int) -> list[float]:
    """Per round, ``over`` ÷ ``under`` of wall (``which=0``) or CPU (1) time: the runs of one round were back to
    back, so the machine's load weighs on both alike."""
    return [a[which] / b[which] for a, b in zip(over, under, strict=True)]


def shown(ratios: list[float]) -> str:
    """The median of ``ratios`` and, in brackets, the middle half of them."""
    low, _, high = statistics.quantiles(ratios, n=4)
    return f"{statistics.median(ratios):.2f} ({low:.2f}–{high:.2f})"


def print_spread(title: str, sides: dict[str, Runs], peaks: dict[str, int], ours: str, *, per: int, unit: str) -> None:
    """A job's markdown tables: per side the median (range) of wall ms and of client CPU µs per ``unit`` (the run's
    CPU ÷ ``per``) and its peak traced KiB; then ``ours`` ÷ each other side, CPU and wall as `shown` per-round
    ratios, and peak memory."""
    print(f"\n### {title}\n")
    print(f"| side | wall ms, median (range) | client CPU µs per {unit}, median (range) | peak traced KiB |")
    print("|---|---|---|---|")
    for side, runs in sides.items():
        walls = [run[0] * 1e3 for run in runs]
        cpus = [run[1] * 1e6 / per for run in runs]
        print(
            f"| {side} | {statistics.median(walls):,.1f} ({min(walls):,.1f}–{max(walls):,.1f}) "
            f"| {statistics.median(cpus):,.1f} ({min(cpus):,.1f}–{max(cpus):,.1f}) | {peaks[side] / 1024:,.0f} |"
        )
    print(f"\n| {ours} ÷ side | client CPU | wall | peak traced memory |")
    print("|---|---|---|---|")
    for side in sides:
        if side != ours:
            cpu, wall = (round_ratios(sides[ours], sides[side], which) for which in (1, 0))
            print(f"| {side} | {shown(cpu)} | {shown(wall)} | {peaks[ours] / peaks[side]:.2f} |")
