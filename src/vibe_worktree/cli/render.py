"""What a person sees on a terminal: the `list` table, colour, a progress line.

Colour and progress only on a terminal: piped output and `--json` stay plain,
and `NO_COLOR` (https://no-color.org) or `TERM=dumb` turns colour off.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TextIO

    from ..lifecycle.foreign import Foreign
    from ..lifecycle.listing import Listed
    from ..lifecycle.pool import PoolStatus

RESET = "\033[0m"
STATE_COLOURS = {
    "ready": "\033[32m",  # green
    "reserved": "\033[33m",  # yellow
    "missing": "\033[31m",  # red
    "snapshot": "\033[36m",  # cyan
    "broken": "\033[1;31m",  # bold red
    "orphaned": "\033[35m",  # magenta
}
DIM = "\033[2m"
HEADER = ["NAME", "BRANCH", "STATE", "AHEAD", "BEHIND", "CHANGES", "LANDED", "HOLDERS",
          "ACTIVITY", "AGE", "PATH"]
ACTIVITY_COLOURS = {"working": STATE_COLOURS["ready"], "waiting": "\033[1;33m"}  # waiting: you


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def wants_colour(stream: TextIO) -> bool:
    if "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    return is_terminal(stream)


def paint(text: str, colour: str | None, enabled: bool) -> str:
    return f"{colour}{text}{RESET}" if enabled and colour else text


def age(claimed_at: str | None, now: float | None = None) -> str:
    """`3d`, `5h`, `12m`, `40s`; `-` without a timestamp, `?` for an unreadable one."""
    if not claimed_at:
        return "-"
    import time

    from ..core.records import parse_timestamp

    try:
        seconds = max(0.0, (now or time.time()) - parse_timestamp(claimed_at))
    except ValueError:
        return "?"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def landed(row: Listed) -> str:
    """The LANDED column: how the worktree's commits are in the target (`merged`,
    `squashed`, ...), `no` when they are not, `-` when it has none or it is unknown;
    `rebase stopped` while a sync is stopped at a conflict there (never landed then)."""
    if row.rebase is not None:
        return REBASE_STOPPED_WORDS
    return _landed(row.target is not None, row.ahead, row.integrated)


def _landed(has_target: bool, ahead: int | None, integrated: str | None) -> str:
    if not has_target or ahead == 0:
        return "-"
    return landed_words(integrated, rebasing=False)


def landed_words(integrated: str | None, rebasing: bool) -> str:
    """The integration as `list` and `status` both word it: the reason in words, `no`
    when it is not integrated, `rebase stopped` while a sync is stopped at a conflict."""
    if rebasing:
        return REBASE_STOPPED_WORDS
    if integrated is None:
        return "no"
    return LANDED_WORDS.get(integrated, integrated)


REBASE_STOPPED_WORDS = "rebase stopped"


LANDED_WORDS = {
    "same_commit": "same commit", "ancestor": "merged", "same_tree": "same tree",
    "no_added_changes": "squashed", "patch_equivalent": "cherry-picked", "squashed": "squashed",
}


INCOMPLETE = "incomplete"  # `setup_state.INCOMPLETE`, without importing lifecycle here


def state_words(row: Listed) -> str:
    """The STATE column: the state, and a ready worktree whose setup did not finish."""
    return f"{row.state} (setup incomplete)" if row.setup == INCOMPLETE else row.state


def list_cells(row: Listed) -> list[str]:
    return [
        row.name, row.branch or "-", state_words(row), _count(row.ahead), _count(row.behind),
        _count(row.changes), landed(row),
        str(row.holders) + (f" (hook {','.join(row.hooks_running)} running)"
                            if row.hooks_running else ""),
        row.activity.state if row.activity else "-", age(row.claimed_at), row.path,
    ]


def _cell_colour(column: int, row: Listed) -> str | None:
    if column == 2:
        return STATE_COLOURS.get("reserved" if row.setup == INCOMPLETE else row.state)
    if column == 5 and row.changes:
        return STATE_COLOURS["reserved"]
    if column == 6 and row.rebase is not None:
        return STATE_COLOURS["reserved"]
    if column == 6 and row.integrated:
        return STATE_COLOURS["ready"]
    if column == 7 and row.holders:
        return STATE_COLOURS["snapshot"]
    if column == 8 and row.activity:
        return ACTIVITY_COLOURS.get(row.activity.state)
    return None


def table(rows: list[list[str]], colours: list[list[str | None]] | None = None,
          colour: bool = False) -> str:
    """Aligned columns, two spaces apart; colour codes do not count toward widths."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for y, row in enumerate(rows):
        cells = []
        for x, (cell, width) in enumerate(zip(row, widths, strict=True)):
            code = colours[y][x] if colours else None
            cells.append(paint(cell, code, colour) + " " * (width - len(cell)))
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def list_table(rows: list[Listed], colour: bool) -> str:
    cells = [HEADER] + [list_cells(r) for r in rows]
    colours: list[list[str | None]] = [[DIM] * len(HEADER)]
    colours += [[_cell_colour(x, r) for x in range(len(HEADER))] for r in rows]
    if any(r.sized for r in rows):  # `list --size`: SIZE before PATH
        from ..core.disk import human

        for line, row in zip(cells, [None, *rows], strict=True):
            line.insert(-1, "SIZE" if row is None else
                        "-" if row.size is None else human(row.size))
        for codes in colours:
            codes.insert(-1, codes[-1] if codes is colours[0] else None)
    return table(cells, colours, colour)


def size_total(rows: list[Listed], pool_bytes: int) -> str:
    """`list --size`: the line under the table, with what the warm pool takes besides."""
    from ..core.disk import human

    measured = [r.size for r in rows if r.size is not None]
    line = (f"total {human(sum(measured))} in {len(measured)} "
            f"checkout{'' if len(measured) == 1 else 's'}")
    if pool_bytes:
        line += f"; the warm pool takes {human(pool_bytes)} more (vwt pool)"
    return line


def pool_lines(pool: PoolStatus) -> str:
    """`vwt pool`: one line per pool, and one more when its last fill failed."""
    from ..core.disk import human

    base = pool.base[:12] if pool.base else "-"
    extra = f", {pool.broken} to clean up (vwt pool drain)" if pool.broken else ""
    line = (f"{pool.bucket}: {pool.ready} ready of {pool.size}, {pool.filling} filling, "
            f"base {base}, {human(pool.bytes)} on disk{extra}")
    if pool.last_error is None:
        return line
    when = f" {age(pool.last_error_at)} ago" if pool.last_error_at else ""
    where = f" (log: {pool.log})" if pool.log else ""
    return f"{line}\n  last fill failed{when}: {pool.last_error}{where}"


FOREIGN_HEADER = ["MADE BY", "BRANCH", "AHEAD", "CHANGES", "LANDED", "LOCKED", "IN USE", "PATH"]


def foreign_table(rows: Sequence[Foreign]) -> str:
    """`vwt foreign`: AHEAD counts the commits not in the target branch."""
    cells = [FOREIGN_HEADER] + [
        [r.made_by, r.branch or "(detached)", _count(r.ahead), _count(r.changes),
         _landed(r.ahead is not None, r.ahead, r.integrated), "yes" if r.locked else "no",
         "yes" if r.in_use else "no", r.path]
        for r in rows
    ]
    return table(cells)


class Progress:
    """One status line on stderr, rewritten in place and erased at the end.

    Silent unless stderr is a terminal, so scripts and `--json` see nothing.
    """

    def __init__(self, enabled: bool | None = None, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = is_terminal(self.stream) if enabled is None else enabled
        self._shown = False

    def update(self, text: str) -> None:
        if not self.enabled:
            return
        self.stream.write(f"\r\033[K{text}")
        self.stream.flush()
        self._shown = True

    def done(self) -> None:
        if self._shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._shown = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.done()
