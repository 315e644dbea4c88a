"""The final table and the JSON document."""

from __future__ import annotations

import platform
import subprocess
import sys
from typing import Any

from benchmarks.measure import Outcome

HEADER = ("id", "what", "tool s", "base s", "ratio", "target", "result", "tool MiB")


def _num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def row(o: Outcome) -> tuple[str, ...]:
    if o.unit == "MiB":
        ratio, target = f"{_num(o.value, 1)} MiB", f"<= {o.target:g} MiB"
    else:
        ratio, target = _num(o.value, 2), f"<= {o.target:g}"
    return (
        o.id,
        o.what,
        _num(o.tool_median),
        _num(o.base_median),
        ratio,
        target,
        o.verdict(),
        _num(o.tool_peak_mib, 1),
    )


def table(outcomes: list[Outcome]) -> str:
    rows = [HEADER, *(row(o) for o in outcomes)]
    widths = [max(len(r[c]) for r in rows) for c in range(len(HEADER))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for o in outcomes:
        if o.error:
            lines.append(f"{o.id} error: {o.error}")
        lines.extend(f"{o.id} note: {note}" for note in o.notes)
    return "\n".join(lines)


def _git_version() -> str:
    try:
        done = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False)
    except OSError:
        return "unknown"
    return done.stdout.strip()


def document(outcomes: list[Outcome], mode: str, tool: str) -> dict[str, Any]:
    return {
        "mode": mode,
        "tool": tool,
        "python": sys.version.split()[0],
        "git": _git_version(),
        "platform": platform.platform(),
        "results": [
            {
                "id": o.id,
                "what": o.what,
                "unit": o.unit,
                "tool_median_s": o.tool_median,
                "baseline_median_s": o.base_median,
                "value": o.value,
                "target": o.target,
                "result": o.verdict(),
                "tool_peak_mib": o.tool_peak_mib,
                "tool_s": [round(s.seconds, 6) for s in o.tool],
                "baseline_s": [round(s.seconds, 6) for s in o.base],
                "error": o.error,
                "notes": o.notes,
            }
            for o in outcomes
        ],
    }
