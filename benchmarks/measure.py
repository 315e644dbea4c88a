"""Alternating rounds and the result of one benchmark."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sample:
    seconds: float
    peak_mib: float = 0.0


Step = Callable[[int], Sample]


def alternate(
    rounds: int,
    tool: Step,
    base: Step,
    prepare: Callable[[int], None] | None = None,
) -> tuple[list[Sample], list[Sample]]:
    """Run tool and baseline once per round, swapping which goes first every round."""
    tools: list[Sample] = []
    bases: list[Sample] = []
    for i in range(rounds):
        if prepare is not None:
            prepare(i)
        if i % 2 == 0:
            tools.append(tool(i))
            bases.append(base(i))
        else:
            bases.append(base(i))
            tools.append(tool(i))
    return tools, bases


@dataclass
class Outcome:
    """One row of the report: a ratio (or a MiB figure) against its target."""

    id: str
    what: str
    target: float
    unit: str = "ratio"  # "ratio": tool/baseline medians; "MiB": tool peak RSS
    tool: list[Sample] = field(default_factory=list)
    base: list[Sample] = field(default_factory=list)
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def tool_median(self) -> float | None:
        return statistics.median(s.seconds for s in self.tool) if self.tool else None

    @property
    def base_median(self) -> float | None:
        return statistics.median(s.seconds for s in self.base) if self.base else None

    @property
    def tool_peak_mib(self) -> float | None:
        return max(s.peak_mib for s in self.tool) if self.tool else None

    @property
    def value(self) -> float | None:
        if self.error is not None:
            return None
        if self.unit == "MiB":
            return self.tool_peak_mib
        tool, base = self.tool_median, self.base_median
        if tool is None or not base:
            return None
        return tool / base

    def within(self, slack: float = 1.0) -> bool:
        value = self.value
        return value is not None and value <= self.target * slack

    def verdict(self) -> str:
        if self.value is None:
            return "ERROR"
        return "PASS" if self.within() else "FAIL"
