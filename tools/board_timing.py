"""How long the board takes to show N worktrees, and to reflect a change on disk.

    python tools/board_timing.py [--worktrees 200] [--changes 5]

Builds N worktrees of one repository in a temporary home, starts the real `vwt board`,
opens it in Debian's Chromium (Playwright) and prints: the time from navigation to all N
rows on screen, and, for a few edits of a file in one worktree, the time from the write to
the new count in its row (median and worst).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from board_screenshot import CHROMIUM, CHROMIUM_ARGS, VWT, _env, _repo, _run, start_board


def measure(count: int, changes: int) -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="vwt-board-timing-") as scratch:
        tmp = Path(scratch).resolve()
        env = _env(tmp)
        repo = _repo(env, tmp / "repo")
        paths = [_run(env, repo, VWT, "new", f"wt-{i:03d}", "--no-fetch") for i in range(count)]
        board, url = start_board(env, tmp)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                                     args=CHROMIUM_ARGS)
                page = browser.new_page()
                began = time.monotonic()
                page.goto(url)
                page.wait_for_function(f"() => document.querySelectorAll('#worktrees tbody tr')"
                                       f".length === {count}", timeout=60_000)
                shown = time.monotonic() - began
                target = Path(paths[0])
                cell = f'#worktrees tr[data-name="{target.name}"] td.changes'
                delays = []
                for i in range(1, changes + 1):
                    (target / f"edit-{i}.txt").write_text("x\n")
                    began = time.monotonic()
                    page.wait_for_function(f"() => document.querySelector('{cell}')"
                                           f".textContent === '{i}'", timeout=30_000)
                    delays.append(time.monotonic() - began)
                browser.close()
        finally:
            board.terminate()
            board.wait(timeout=15)
    print(f"{count} worktrees shown in {shown:.2f} s after navigation")
    print(f"a change on disk shown in {statistics.median(delays):.2f} s (median of {changes}),"
          f" {max(delays):.2f} s at worst")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worktrees", type=int, default=200)
    parser.add_argument("--changes", type=int, default=5)
    args = parser.parse_args()
    measure(args.worktrees, args.changes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
