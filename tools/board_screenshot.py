"""Take the README's screenshot of the board (docs/board.png) with the test browser.

    python tools/board_screenshot.py [--out docs/board.png]

Builds a small demo in a temporary home (two repositories, a held, a dirty and a
snapshot-only worktree), starts the real `vwt board` on it, and photographs the page in
Debian's Chromium through Playwright, as the browser tests do.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM = os.environ.get("VWT_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
VWT = str(Path(sys.executable).with_name("vwt"))


def _env(tmp: Path) -> dict[str, str]:
    config = tmp / "gitconfig"
    config.write_text("[user]\n\tname = Ada\n\temail = ada@example.com\n"
                      "[init]\n\tdefaultBranch = main\n")
    (tmp / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "VWT_"))}
    env.update(HOME=str(tmp / "home"), VIBE_HOME=str(tmp / "vibe"), GIT_CONFIG_NOSYSTEM="1",
               GIT_CONFIG_GLOBAL=str(config), GIT_CEILING_DIRECTORIES=str(tmp))
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return env


def _run(env: dict[str, str], cwd: Path, *args: str) -> str:
    return subprocess.run(list(args), cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def _repo(env: dict[str, str], path: Path) -> Path:
    path.mkdir()
    _run(env, path, "git", "init", "-q")
    (path / "README.md").write_text(f"# {path.name}\n")
    _run(env, path, "git", "add", "-A")
    _run(env, path, "git", "commit", "-q", "-m", "initial")
    return path


def _commit(env: dict[str, str], where: str, name: str, text: str, message: str) -> None:
    Path(where, name).write_text(text)
    _run(env, Path(where), "git", "add", "-A")
    _run(env, Path(where), "git", "commit", "-q", "-m", message)


def start_board(env: dict[str, str], cwd: Path) -> tuple[subprocess.Popen[str], str]:
    """`vwt board --no-open` in the background, and the URL it printed."""
    board = subprocess.Popen([VWT, "board", "--no-open"], env=env, cwd=cwd, text=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
    assert board.stdout is not None
    url = board.stdout.readline().strip()
    assert re.match(r"^http://127\.0\.0\.1:\d+/\?token=", url), url
    return board, url


def build_demo(tmp: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """The demo worktrees; returns the `vwt run` process holding one of them."""
    webapp, api = _repo(env, tmp / "webapp"), _repo(env, tmp / "api")
    spike = _run(env, webapp, VWT, "new", "old-spike")
    Path(spike, "idea.txt").write_text("maybe later\n")
    _run(env, webapp, VWT, "rm", "old-spike", "-y")
    fix = _run(env, webapp, VWT, "new", "fix-typo")
    _commit(env, fix, "README.md", "# webapp, fixed\n", "Fix the typo in the README")
    db = _run(env, api, VWT, "new", "refactor-db")
    _commit(env, db, "db.py", "POOL = 4\n", "Pool connections")
    _commit(env, db, "db.py", "POOL = 8\n", "Bigger pool")
    Path(db, "migrate.py").write_text("# todo\n")
    login = _run(env, webapp, VWT, "new", "-p", "Add a login page with OAuth")
    Path(login, "login.html").write_text("<form></form>\n")
    Path(login, "README.md").write_text("# webapp with login\n")
    return subprocess.Popen([VWT, "run", Path(login).name, "--", "sleep", "600"], cwd=webapp,
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def take(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="vwt-board-shot-") as scratch:
        tmp = Path(scratch).resolve()
        env = _env(tmp)
        holder = build_demo(tmp, env)
        board, url = start_board(env, tmp)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM,
                                                     args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 300})
                page.goto(url)
                page.wait_for_selector("td.holders .holder")
                page.screenshot(path=str(out), full_page=True)
                browser.close()
        finally:
            board.send_signal(signal.SIGINT)
            board.wait(timeout=15)
            holder.kill()
            holder.wait(timeout=15)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent.parent / "docs" /
                        "board.png")
    take(parser.parse_args().out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
