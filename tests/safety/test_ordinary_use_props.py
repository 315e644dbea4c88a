"""Ordinary use stays healthy (SPEC §11): after any sequence of ordinary commands, `vwt doctor`
reports healthy.

Random sequences of `new` (with a background post_create hook that finishes, and `--carry`),
`run`, `snapshot`, `rm`, `restore`, `merge`, `sync` (also stopped at a conflict and aborted),
`prune`, and the user's own commits and edits, on a real repository with a real home per
example. The default run is small (a few examples); the `slow` one tries many more.
"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NAMES = ("alpha", "beta")
FLAGS = {
    "new": ([], ["--carry"]),
    "rm": ([], ["-y"]),
    "merge": ([], ["--commit"], ["--rebase"], ["--keep"]),
    "sync": ([], ["--stop-on-conflict"]),
    "prune": (["--keep", "0"], ["--keep", "1"], ["--merged"], ["--dry-run"]),
}
COMMANDS = ("new", "run", "snapshot", "rm", "restore", "merge", "sync", "prune")
USER_ACTIONS = ("commit", "conflicting_commit", "edit", "main_moves", "main_edit", "abort")

steps = st.one_of(
    st.tuples(st.sampled_from(COMMANDS), st.sampled_from(NAMES), st.integers(0, 3)),
    st.tuples(st.sampled_from(USER_ACTIONS), st.sampled_from(NAMES), st.integers(0, 3)),
)
sequences = st.tuples(st.booleans(), st.lists(steps, min_size=1, max_size=7))
BACKGROUND_HOOK = ('[[hooks]]\nname = "deps"\ntype = "post_create"\n'
                   'command = "echo installing; sleep 0.2; echo done"\nbackground = true\n')


class Session:
    """One example: a repository and a home of its own; the vwt fixture runs the commands."""

    def __init__(self, make_repo: Any, vwt: Any, where: str, hook: bool) -> None:
        self.repo = make_repo(f"{where}/repo", commits=2)
        self.home = self.repo.path.parent / "vibe"
        self.home.mkdir()
        if hook:
            (self.home / "worktree.toml").write_text(BACKGROUND_HOOK)
        self.vwt = vwt
        self.env = {"VIBE_HOME": str(self.home)}
        self.log: list[str] = []

    def run(self, *args: str) -> Any:
        result = self.vwt(*args, cwd=self.repo.path, env_extra=self.env)
        self.log.append(f"vwt {' '.join(args)} -> {result.code}")
        assert result.code in (0, 1, 3, 4), str(result)  # never a usage error or a crash
        return result

    def checkout(self, name: str) -> Path | None:
        for row in json.loads(self.run("list", "--json").out):
            if row["name"] == name and row["state"] == "ready":
                return Path(row["path"])
        return None

    def git(self, *args: str, cwd: Path) -> None:
        self.repo.git(*args, cwd=cwd)
        self.log.append(f"git {' '.join(args)} (in {cwd.name})")

    def step(self, action: str, name: str, variant: int) -> None:
        if action in COMMANDS:
            flags = FLAGS.get(action, ([],))
            extra = flags[variant % len(flags)]
            if action == "run":
                self.run("run", name, "--", "true")
            elif action == "prune":
                self.run("prune", *extra)
            else:
                self.run(action, name, *extra)
            return
        self.user_action(action, name, variant)

    def user_action(self, action: str, name: str, variant: int) -> None:
        main = self.repo.path
        if action == "main_moves":
            self.repo.commit(f"main {variant}", {"shared.txt": f"main {variant}\n"})
            self.log.append("main commits shared.txt")
            return
        if action == "main_edit":  # uncommitted work in the main checkout (for --carry)
            (main / f"carried-{variant}.txt").write_text("carry me\n")
            self.log.append("main checkout gets an untracked file")
            return
        path = self.checkout(name)
        if path is None:
            return
        if action == "abort":
            self.run("sync", name, "--abort")
        elif action == "edit":
            (path / f"wip-{variant}.txt").write_text("wip\n")
            self.log.append(f"{name}: untracked file")
        elif action in ("commit", "conflicting_commit"):
            rel = "shared.txt" if action == "conflicting_commit" else f"{name}-{variant}.txt"
            (path / rel).write_text(f"{name} {variant}\n")
            if (path / ".git").exists() and not _rebasing(path):
                self.git("add", "-A", cwd=path)
                self.git("commit", "-q", "-m", f"{name} {variant}", cwd=path)

    def finish(self) -> None:
        """Background hooks finish; a sync left stopped is resolved one way or the other
        (an ordinary session does not walk away from a conflict)."""
        for name in NAMES:
            path = self.checkout(name)
            if path is not None and _rebasing(path):
                self.run("sync", name, "--abort")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            rows = json.loads(self.run("list", "--json").out)
            if not any(row["hooks_running"] for row in rows):
                break
            time.sleep(0.1)

    def doctor(self) -> dict[str, Any]:
        result = self.run("doctor", "--json")
        data: dict[str, Any] = json.loads(result.out)
        return data


def _rebasing(path: Path) -> bool:
    admin = (path / ".git").read_text().strip().removeprefix("gitdir: ")
    return any((Path(admin) / state).is_dir() for state in ("rebase-merge", "rebase-apply"))


def check_sequence(make_repo: Any, vwt: Any, counter: Any, hook: bool,
                   sequence: list[tuple[str, str, int]]) -> None:
    session = Session(make_repo, vwt, f"ex{next(counter)}", hook)
    for action, name, variant in sequence:
        session.step(action, name, variant)
    session.finish()
    report = session.doctor()
    assert report["healthy"], "\n".join([*session.log, json.dumps(report["problems"], indent=1)])


SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@settings(max_examples=6, **SETTINGS)  # type: ignore[arg-type]
@given(sequences)
def test_ordinary_commands_leave_doctor_healthy(make_repo, vwt, sequence) -> None:  # type: ignore[no-untyped-def]
    hook, steps_ = sequence
    check_sequence(make_repo, vwt, _counter(vwt), hook, steps_)


@pytest.mark.slow
@settings(max_examples=60, **SETTINGS)  # type: ignore[arg-type]
@given(sequences)
def test_many_ordinary_sequences_leave_doctor_healthy(make_repo, vwt, sequence) -> None:  # type: ignore[no-untyped-def]
    hook, steps_ = sequence
    check_sequence(make_repo, vwt, _counter(vwt), hook, steps_)


def _counter(vwt: Any) -> Any:
    """One counter per test (the fixtures live as long as the test, across its examples)."""
    if not hasattr(vwt, "_examples"):
        vwt._examples = itertools.count()
    return vwt._examples


def test_the_issue_sequence_leaves_doctor_healthy(make_repo, vwt) -> None:  # type: ignore[no-untyped-def]
    """merge, restore, clean rm (the sequence a new user ran) and a finished background hook."""
    session = Session(make_repo, vwt, "issue", hook=True)
    for step in [("new", "alpha", 0), ("commit", "alpha", 1), ("merge", "alpha", 0),
                 ("restore", "alpha", 0), ("rm", "alpha", 0), ("new", "beta", 0),
                 ("prune", "beta", 3)]:
        session.step(*step)
    session.finish()
    assert session.doctor()["healthy"], session.log
