"""Any mix of `land`, `merge`, `sync`, `new` and `rm` (SPEC §18, §8, §11), with commits in the
worktrees, uncommitted edits, conflicting work and main moving on, leaves every landed
commit's changes on the target exactly once, loses nothing, and leaves `vwt doctor` healthy.

Each commit of a session appends a line no other step writes (`change N`) to its worktree's
notes file; a change some `land` or `merge` reported landed must be in main's tree once and
brought in by exactly one commit of main's history; no change is ever on main twice; every
change is reachable from a branch or a snapshot `restore` brings back.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from land_support import Lander

pytestmark = pytest.mark.timeout(900)

NAMES = ("alpha", "beta", "gamma")
LAND_FLAGS = ([], ["--keep"], ["--gate", "true"], ["--gate", "false"], ["--no-wait"])
ACTIONS = ("new", "commit", "conflicting_commit", "edit", "main_moves", "land", "land_ready",
           "merge", "sync", "rm")
steps = st.tuples(st.sampled_from(ACTIONS), st.lists(st.sampled_from(NAMES), min_size=1,
                                                      max_size=3, unique=True),
                  st.integers(0, 4))
sequences = st.lists(steps, min_size=1, max_size=10)
SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


class Session:
    def __init__(self, make_repo: Any, vwt: Any, land: Lander, where: str) -> None:
        self.repo = make_repo(f"{where}/repo", commits=2)
        self.home = self.repo.path.parent / "vibe"
        self.home.mkdir()
        self.vwt, self.land = vwt, land
        self.env = {"VIBE_HOME": str(self.home)}
        self.log: list[str] = []
        self.changes = itertools.count()
        self.pending: dict[str, list[str]] = {}  # worktree -> its changes not yet landed
        self.landed: set[str] = set()  # changes some land or merge said landed

    def run(self, *args: str) -> Any:
        result = self.vwt(*args, cwd=self.repo.path, env_extra=self.env)
        self.log.append(f"vwt {' '.join(args)} -> {result.code}")
        assert result.code in (0, 1, 3, 4), str(result)
        return result

    def checkout(self, name: str) -> Path | None:
        for row in json.loads(self.run("list", "--json").out):
            if row["name"] == name and row["state"] == "ready":
                return Path(row["path"])
        return None

    def step(self, action: str, names: list[str], variant: int) -> None:
        name = names[0]
        if action == "new":
            if self.checkout(name) is None:
                self.run("new", name, "--no-fetch")
                self.pending[name] = []
        elif action in ("commit", "conflicting_commit", "edit"):
            self.work(action, name, variant)
        elif action == "main_moves":
            self.repo.commit(f"main {variant}", {"shared.txt": f"main {variant}\n"})
            self.log.append("main commits shared.txt")
        elif action in ("land", "land_ready"):
            self.do_land(names, LAND_FLAGS[variant % len(LAND_FLAGS)], action == "land_ready")
        elif action == "merge":
            result = self.run("merge", name, "--json", *(["--keep"] if variant % 2 else []))
            if result.out.strip():
                self.settle(name, json.loads(result.out)["outcome"])
        elif action == "sync":
            self.run("sync", name, "--no-fetch")
        elif action == "rm" and self.run("rm", name, "-y").code == 0:
            self.pending.pop(name, None)

    def work(self, action: str, name: str, variant: int) -> None:
        path = self.checkout(name)
        if path is None:
            return
        if action == "edit":
            (path / f"wip-{variant}.txt").write_text("uncommitted\n")
            self.log.append(f"{name}: uncommitted file")
            return
        if action == "conflicting_commit":
            (path / "shared.txt").write_text(f"{name} {variant}\n")
        change = f"change {next(self.changes):03d}"
        notes = path / f"notes-{name}.txt"
        notes.write_text((notes.read_text() if notes.exists() else "") + change + "\n")
        self.repo.git("add", "-A", cwd=path)
        self.repo.git("commit", "-q", "-m", f"{name}: {change}", cwd=path)
        self.pending.setdefault(name, []).append(change)
        self.log.append(f"{name}: commits {change}")

    def do_land(self, names: list[str], flags: list[str], ready: bool) -> None:
        args = ["--ready"] if ready else names
        result = self.land(*args, *flags, "--json", cwd=self.repo.path, env_extra=self.env)
        self.log.append(f"vwt land {' '.join([*args, *flags])} -> {result.code}")
        assert result.code in (0, 1), str(result)
        for item in json.loads(result.out)["results"]:
            self.log.append(f"  {item['name']}: {item['outcome']}")
            self.settle(item["name"], item["outcome"])

    def settle(self, name: str, outcome: str) -> None:
        if outcome == "merged":
            self.landed.update(self.pending.get(name, []))
            self.pending[name] = []

    def main_tree_count(self, change: str) -> int:
        found = self.repo.sandbox.run_git("grep", "-c", "-e", f"^{change}$", "main", "--",
                                          cwd=self.repo.path, check=False)
        return sum(int(line.rpartition(":")[2]) for line in found.stdout.splitlines())

    def commits_bringing(self, change: str) -> int:
        out = self.repo.git("log", "--format=%H", "-S", change, "main", "--")
        return len(out.split())

    def reachable(self) -> str:
        refs = self.repo.git("for-each-ref", "--format=%(refname)", "refs/heads/",
                             "refs/vibe/").split()
        return self.repo.git("log", "-p", "--format=", *refs, "--")

    def check(self) -> None:
        story = "\n".join(self.log)
        every = [f"change {i:03d}" for i in range(next(self.changes))]
        for change in every:
            on_main = self.main_tree_count(change)
            assert on_main <= 1, f"{change} is on main {on_main} times\n{story}"
            if change in self.landed:
                assert on_main == 1, f"{change} was landed but is not on main\n{story}"
                assert self.commits_bringing(change) == 1, \
                    f"{change} came to main in {self.commits_bringing(change)} commits\n{story}"
        history = self.reachable()
        for change in every:
            assert f"+{change}" in history, f"{change} is lost\n{story}"
        doctor = json.loads(self.run("doctor", "--json").out)
        assert doctor["healthy"], f"{story}\n{json.dumps(doctor['problems'], indent=1)}"


_COUNTER = itertools.count()


def check_sequence(make_repo: Any, vwt: Any, land: Lander, sequence: list[Any]) -> None:
    session = Session(make_repo, vwt, land, f"ex{next(_COUNTER)}")
    for action, names, variant in sequence:
        session.step(action, list(names), variant)
    session.check()


TWO_LANDS = [("new", ["alpha"], 0), ("new", ["beta"], 0), ("commit", ["alpha"], 0),
             ("commit", ["beta"], 0), ("main_moves", ["alpha"], 0),
             ("land", ["alpha", "beta"], 0), ("land", ["alpha", "beta"], 0)]
KEEP_THEN_MORE = [("new", ["alpha"], 0), ("commit", ["alpha"], 0), ("land", ["alpha"], 1),
                  ("commit", ["alpha"], 1), ("merge", ["alpha"], 0), ("land_ready", ["alpha"], 0)]
CONFLICTS = [("new", ["alpha"], 0), ("new", ["beta"], 0), ("conflicting_commit", ["alpha"], 0),
             ("conflicting_commit", ["beta"], 1), ("main_moves", ["beta"], 2),
             ("land", ["beta", "alpha"], 2), ("sync", ["alpha"], 0), ("rm", ["beta"], 0)]


@pytest.fixture
def land(vwt, sandbox):
    return Lander(vwt)


@settings(max_examples=4, **SETTINGS)  # type: ignore[arg-type]
@given(sequences)
@example(TWO_LANDS)
@example(KEEP_THEN_MORE)
@example(CONFLICTS)
def test_lands_mixed_with_other_commands_land_each_change_once(make_repo, vwt, land,
                                                              sequence) -> None:  # type: ignore[no-untyped-def]
    check_sequence(make_repo, vwt, land, sequence)


@pytest.mark.slow
@settings(max_examples=60, **SETTINGS)  # type: ignore[arg-type]
@given(sequences)
def test_many_mixed_sequences_land_each_change_once(make_repo, vwt, land,
                                                   sequence) -> None:  # type: ignore[no-untyped-def]
    check_sequence(make_repo, vwt, land, sequence)
