"""Ordinary use stays healthy (SPEC §11): after any sequence of ordinary commands, `vwt doctor`
reports healthy, and nothing a session made is lost (SPEC §16: restored work is still work).

Random sequences of `new` (with a background post_create hook that finishes, and `--carry`),
`run`, `snapshot`, `rm`, `restore`, `merge`, `sync` (also stopped at a conflict and aborted),
`prune`, pool use (`[pool] size` in the home's worktree.toml, `pool fill`, `pool drain`, `new`
taking a ready entry) and the user's own commits and edits, on a real repository with a real
home per example. The default run is small (a few examples); the `slow` one tries many more.
Every commit and edit a session makes has content of its own; at the end each is still
reachable from a branch (the target included) or from a snapshot ref `restore` brings back,
and an edit may also still be in its checkout.

Only what §11 calls ordinary is drawn: `rm` of a snapshot-only entry whose snapshot has work
the target branch lacks (forgetting it keeps its ref on purpose) becomes `restore`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import is_locked

NAMES = ("alpha", "beta")
FLAGS = {
    "new": ([], ["--carry"]),
    "rm": ([], ["-y"]),
    "merge": ([], ["--commit"], ["--rebase"], ["--keep"]),
    "sync": ([], ["--stop-on-conflict"]),
    "prune": (["--keep", "0"], ["--keep", "1"], ["--merged"], ["--dry-run"]),
    "pool": (["fill"], ["drain"], ["fill", "--size", "1"], ["status"]),
}
COMMANDS = ("new", "run", "snapshot", "rm", "restore", "merge", "sync", "prune", "pool")
USER_ACTIONS = ("commit", "conflicting_commit", "edit", "main_moves", "main_edit", "abort")

steps = st.one_of(
    st.tuples(st.sampled_from(COMMANDS), st.sampled_from(NAMES), st.integers(0, 3)),
    st.tuples(st.sampled_from(USER_ACTIONS), st.sampled_from(NAMES), st.integers(0, 3)),
)
Step = tuple[str, str, int]
# (background hook?, `[pool] size`, steps)
sequences = st.tuples(st.booleans(), st.integers(0, 2), st.lists(steps, min_size=1, max_size=7))
BACKGROUND_HOOK = ('[[hooks]]\nname = "deps"\ntype = "post_create"\n'
                   'command = "echo installing; sleep 0.2; echo done"\nbackground = true\n')


class Session:
    """One example: a repository and a home of its own; the vwt fixture runs the commands."""

    def __init__(self, make_repo: Any, vwt: Any, where: str, hook: bool, pool: int = 0) -> None:
        self.repo = make_repo(f"{where}/repo", commits=2)
        self.home = self.repo.path.parent / "vibe"
        self.home.mkdir()
        config = (f"[pool]\nsize = {pool}\n\n" if pool else "") + (BACKGROUND_HOOK if hook else "")
        if config:
            (self.home / "worktree.toml").write_text(config)
        self.vwt = vwt
        self.env = {"VIBE_HOME": str(self.home)}
        self.log: list[str] = []
        self.made: list[Made] = []  # every commit and edit the session made, to be kept

    def run(self, *args: str) -> Any:
        result = self.vwt(*args, cwd=self.repo.path, env_extra=self.env)
        self.log.append(f"vwt {' '.join(args)} -> {result.code}")
        assert result.code in (0, 1, 3, 4), str(result)  # never a usage error or a crash
        return result

    def checkout(self, name: str) -> Path | None:
        return Path(row["path"]) if (row := self.row(name, "ready")) else None

    def row(self, name: str, state: str) -> dict[str, Any] | None:
        for row in json.loads(self.run("list", "--json").out):
            if row["name"] == name and row["state"] == state:
                return dict(row)
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
            elif action in ("prune", "pool"):
                self.run(action, *extra)
            elif action == "rm" and self.row(name, "snapshot") and not self.landed(name):
                self.run("restore", name)  # forgetting unlanded work is not ordinary (§11)
            else:
                self.run(action, name, *extra)
            return
        self.user_action(action, name, variant)

    def landed(self, name: str) -> bool:
        """Merging the snapshot into main would change nothing: main has all of it (checked
        with git alone, not with vwt's own integration checks)."""
        snapshot = self.repo.git("rev-parse", f"refs/vibe/reaped/{name}").strip()
        merged = self.repo.git("merge-tree", "--write-tree", "main", snapshot, check=False)
        return merged.split("\n", 1)[0].strip() == self.repo.git(
            "rev-parse", "main^{tree}").strip()

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
            n = len(self.made)
            rel, text = f"wip-{variant}-{n}.txt", f"wip {n}\n"
            (path / rel).write_text(text)
            self.made.append(Made("edit", name, rel, text))
            self.log.append(f"{name}: untracked file {rel}")
        elif action in ("commit", "conflicting_commit"):
            n = len(self.made)
            rel = "shared.txt" if action == "conflicting_commit" else f"{name}-{variant}.txt"
            text = f"{name} {variant} ({n})\n"  # never the same twice: a commit is never empty
            (path / rel).write_text(text)
            if (path / ".git").exists() and not _rebasing(path):
                self.git("add", "-A", cwd=path)
                self.git("commit", "-q", "-m", f"{name} {variant} ({n})", cwd=path)
                self.made.append(Made("commit", name, rel, text))

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
            if not any(row["hooks_running"] for row in rows) and not self.filling():
                break
            time.sleep(0.1)

    def filling(self) -> bool:
        """A background filler `new` started holds or waits for a pool's lock."""
        locks = (self.home / "worktrees" / ".pool").glob("*/.fill*")
        return any(is_locked(lock) for lock in locks)

    def lost(self) -> list[str]:
        """What the session made that is gone: a commit's or an edit's content is in no
        commit reachable from a branch or from a snapshot ref `restore` brings back (one
        with a recovery record), and an edit is not in its checkout either."""
        kept = self.reachable_blobs()
        lost = []
        for made in self.made:
            if made.blob in kept:
                continue
            path = self.checkout(made.name) if made.kind == "edit" else None
            if path is not None and _read(path / made.rel) == made.text:
                continue
            lost.append(f"{made.name}: {made.kind} of {made.rel} ({made.text.strip()})")
        return lost

    def reachable_blobs(self) -> set[str]:
        refs = self.repo.git("for-each-ref", "--format=%(refname)", "refs/heads/",
                             "refs/tags/", "refs/remotes/").split()
        refs += [f"refs/vibe/reaped/{name}" for name in NAMES if self.row(name, "snapshot")
                 and self.repo.ref_exists(f"refs/vibe/reaped/{name}")]
        listed = self.repo.git("rev-list", "--objects", *refs)
        return {line.split(" ", 1)[0] for line in listed.splitlines()}

    def doctor(self) -> dict[str, Any]:
        result = self.run("doctor", "--json")
        data: dict[str, Any] = json.loads(result.out)
        return data


class Made(NamedTuple):
    """A commit or an edit of a session: one file with content no other step writes."""

    kind: str  # "commit" or "edit" (an untracked file)
    name: str
    rel: str
    text: str

    @property
    def blob(self) -> str:
        data = self.text.encode()
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _rebasing(path: Path) -> bool:
    admin = (path / ".git").read_text().strip().removeprefix("gitdir: ")
    return any((Path(admin) / state).is_dir() for state in ("rebase-merge", "rebase-apply"))


def check_sequence(make_repo: Any, vwt: Any, counter: Any, hook: bool,
                   sequence: list[Step], pool: int = 0) -> None:
    session = Session(make_repo, vwt, f"ex{next(counter)}", hook, pool)
    for action, name, variant in sequence:
        session.step(action, name, variant)
    session.finish()
    report = session.doctor()
    assert report["healthy"], "\n".join([*session.log, json.dumps(report["problems"], indent=1)])
    lost = session.lost()
    assert not lost, "\n".join([*session.log, "lost:", *lost])


SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


# The two sequences an audit found failing (merge or prune, then rm of what they left), and
# pool use: a `new` taking a ready entry, the background refill, a drain.
MERGE_THEN_RM = (False, 0, [("new", "alpha", 0), ("commit", "alpha", 1), ("merge", "alpha", 0),
                            ("rm", "alpha", 0)])
PRUNE_THEN_RM = (False, 0, [("new", "alpha", 0), ("prune", "alpha", 0), ("rm", "alpha", 0)])
UNLANDED_RM = (False, 0, [("new", "alpha", 0), ("commit", "alpha", 1), ("prune", "alpha", 0),
                          ("rm", "alpha", 0)])
# rm -y of a worktree with a commit of its own, restore, then a plain rm: the restored commit
# is still work, so the rm asks (exit 3) instead of deleting branch and snapshot.
RESTORED_COMMIT_RM = (False, 0, [("new", "alpha", 0), ("commit", "alpha", 1), ("rm", "alpha", 1),
                                 ("restore", "alpha", 0), ("rm", "alpha", 0)])
POOL_TAKEN = (True, 1, [("pool", "alpha", 0), ("new", "alpha", 0), ("commit", "alpha", 1),
                        ("merge", "alpha", 0), ("pool", "alpha", 1), ("new", "beta", 0),
                        ("rm", "alpha", 0)])


@settings(max_examples=6, **SETTINGS)  # type: ignore[arg-type]
@given(sequences)
@example(MERGE_THEN_RM)
@example(PRUNE_THEN_RM)
@example(UNLANDED_RM)
@example(POOL_TAKEN)
@example(RESTORED_COMMIT_RM)
def test_ordinary_commands_leave_doctor_healthy(make_repo, vwt, sequence) -> None:  # type: ignore[no-untyped-def]
    hook, pool, steps_ = sequence
    check_sequence(make_repo, vwt, _counter(vwt), hook, steps_, pool)


@pytest.mark.slow
@settings(max_examples=60, **SETTINGS)  # type: ignore[arg-type]
@given(sequences)
def test_many_ordinary_sequences_leave_doctor_healthy(make_repo, vwt, sequence) -> None:  # type: ignore[no-untyped-def]
    hook, pool, steps_ = sequence
    check_sequence(make_repo, vwt, _counter(vwt), hook, steps_, pool)


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


@pytest.mark.parametrize("sequence", [MERGE_THEN_RM[2], PRUNE_THEN_RM[2]],
                         ids=["merge_then_rm", "prune_then_rm"])
def test_rm_of_what_merge_or_prune_left_is_ordinary(make_repo, vwt, sequence) -> None:  # type: ignore[no-untyped-def]
    """The `rm` really runs (the snapshot is landed, so it is not turned into `restore`), and
    leaves no snapshot ref behind."""
    session = Session(make_repo, vwt, f"rm-{len(sequence)}", hook=False)
    for step in sequence:
        session.step(*step)
    assert session.log[-1] == "vwt rm alpha -> 0"
    assert not session.repo.ref_exists("refs/vibe/reaped/alpha")
    assert session.doctor()["healthy"], session.log


def test_rm_of_a_snapshot_only_entry_with_unlanded_work_is_drawn_as_restore(make_repo, vwt) -> None:  # type: ignore[no-untyped-def]
    session = Session(make_repo, vwt, "unlanded", hook=False)
    for step in UNLANDED_RM[2]:
        session.step(*step)
    assert session.log[-1] == "vwt restore alpha -> 0"
    assert session.checkout("alpha") is not None
    assert session.doctor()["healthy"], session.log


@pytest.mark.slow
def test_a_new_from_the_pool_and_its_refill_leave_doctor_healthy(make_repo, vwt) -> None:  # type: ignore[no-untyped-def]
    session = Session(make_repo, vwt, "pool", hook=True, pool=1)
    session.step("pool", "alpha", 0)
    created = json.loads(session.run("new", "alpha", "--json").out)
    assert created["pooled"] is True
    session.finish()
    assert json.loads(session.run("pool", "--json").out)["pools"][0]["ready"] == 1  # refilled
    assert session.doctor()["healthy"], session.log


def test_a_restored_commit_is_asked_about_again_and_kept(make_repo, vwt) -> None:  # type: ignore[no-untyped-def]
    """The sequence a new user ran: rm -y, restore, plain rm. The rm is refused (exit 3), and
    the commit is still on its branch."""
    session = Session(make_repo, vwt, "restored", hook=False)
    for step in RESTORED_COMMIT_RM[2]:
        session.step(*step)
    assert session.log[-1] == "vwt rm alpha -> 3"
    assert session.checkout("alpha") is not None
    assert not session.lost(), session.log
    assert session.doctor()["healthy"], session.log
