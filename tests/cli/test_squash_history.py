"""Squash-merged pull requests recognised on histories shaped like real ones (SPEC §8).

A generator (seeded, printed) grows a repository the way a busy project grows: a target
branch several hundred commits long where most commits edit a few lines of a few files,
pull requests of 2-12 commits forked at different moments (edits, insertions, deletions,
commits that undo or redo earlier ones), most of them landed later as a forge lands them
(one commit on the target whose tree is the target merged with the pull request), and
commits on the target after a landing that edit the same lines again. Then each pull
request is checked out as a vwt worktree holding its original commits, and one `vwt list`
must call every landed one integrated and nothing else: pull requests that never landed
(some because they conflicted) and landed ones with one more commit of new work.
"""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass, field

import pytest

FILES = 30
LINES = 40


@dataclass
class PullRequest:
    number: int
    fork: str  # the target's commit it was forked from
    commits: int
    landed: bool = False
    extra_work: bool = False  # one more commit of new work after it landed
    touched: dict[str, list[int]] = field(default_factory=dict)  # file -> lines it edited

    @property
    def ref(self) -> str:
        return f"refs/heads/hist/pr-{self.number:03d}"

    @property
    def name(self) -> str:
        return f"pr-{self.number:03d}"


class History:
    """The target branch `main` and pull requests, written with `git fast-import`."""

    def __init__(self, repo, seed: int) -> None:
        self.repo = repo
        self.rng = random.Random(seed)
        self.main = {f"src/f{i:02d}.txt": [f"f{i:02d} line {n} v0" for n in range(LINES)]
                     for i in range(FILES)}
        self.stream: list[str] = []
        self.main_pending = False
        self.clock = 1_700_000_000
        self.edits = 0
        self.hot: list[tuple[str, int]] = []  # lines a landed pull request edited
        self.pulls: list[PullRequest] = []
        self._commit("refs/heads/main", "refs/heads/main^0", self.main, "initial")
        self.flush()

    # -- the fast-import stream ----------------------------------------------------------

    def _commit(self, ref: str, parent: str | None, files: dict[str, list[str]],
                message: str) -> None:
        self.clock += 60
        lines = [f"commit {ref}", f"committer Dev <dev@example.com> {self.clock} +0000",
                 f"data {len(message.encode())}", message]
        if parent:
            lines.append(f"from {parent}")
        for path, content in files.items():
            data = "".join(f"{line}\n" for line in content)
            lines += [f"M 100644 inline {path}", f"data {len(data.encode())}", data]
        self.stream.append("\n".join(lines) + "\n")

    def flush(self) -> None:
        if self.stream:
            done = subprocess.run(["git", "fast-import", "--quiet"], cwd=self.repo.path,
                           env=self.repo.sandbox.env, input="".join(self.stream), text=True,
                           check=False, capture_output=True, timeout=120)
            assert done.returncode == 0, done.stderr
        self.stream = []
        self.main_pending = False

    def main_commit(self, files: dict[str, list[str]], message: str) -> None:
        self._commit("refs/heads/main", None if self.main_pending else "refs/heads/main^0",
                     files, message)
        self.main_pending = True

    def tip(self) -> str:
        self.flush()
        return self.repo.git("rev-parse", "refs/heads/main")

    # -- what happens to the project -------------------------------------------------------

    def _word(self) -> str:
        self.edits += 1
        return f"e{self.edits}"

    def noise(self) -> None:
        """A commit on the target editing 1-3 lines; after a landing, often the same lines."""
        changed: dict[str, list[str]] = {}
        for _ in range(self.rng.randint(1, 3)):
            if self.hot and self.rng.random() < 0.5:
                path, line = self.hot.pop(self.rng.randrange(len(self.hot)))
            else:
                path = self.rng.choice(sorted(self.main))
                line = self.rng.randrange(len(self.main[path]))
            content = changed.setdefault(path, list(self.main[path]))
            if line < len(content):
                content[line] = f"{content[line].split(' ~')[0]} ~{self._word()}"
        self.main.update(changed)
        self.main_commit(changed, f"main work {self.edits}")

    def open_pull(self) -> PullRequest:
        pull = PullRequest(len(self.pulls) + 1, self.tip(), self.rng.randint(2, 12))
        files = {p: list(self.main[p]) for p in self.rng.sample(sorted(self.main),
                                                               self.rng.randint(1, 3))}
        start = {p: list(c) for p, c in files.items()}
        region = {p: self.rng.randrange(LINES - 8) for p in files}
        done: list[tuple[str, int, str]] = []  # (path, line, what it replaced)
        for c in range(pull.commits):
            path = self.rng.choice(sorted(files))
            content = files[path]
            roll = self.rng.random()
            if done and roll < 0.15:  # undo an earlier commit's edit
                upath, line, old = done.pop(self.rng.randrange(len(done)))
                if line < len(files[upath]):
                    files[upath][line] = old
                path = upath
            elif roll < 0.25 and len(content) > 10:  # delete a line
                del content[min(region[path] + self.rng.randrange(6), len(content) - 1)]
            elif roll < 0.35:  # insert a line
                content.insert(region[path] + self.rng.randrange(6), f"new {self._word()}")
            else:  # edit (or edit again) a line near the others
                line = min(region[path] + self.rng.randrange(6), len(content) - 1)
                done.append((path, line, content[line]))
                content[line] = f"{content[line]} +{self._word()}"
                pull.touched.setdefault(path, []).append(line)
            self._commit(pull.ref, pull.fork if c == 0 else None, {path: content},
                         f"pr {pull.number} commit {c}")
        if files == start:  # every edit undone: a pull request changes something
            path = sorted(files)[0]
            files[path].append(f"tail {self._word()}")
            self._commit(pull.ref, None, {path: files[path]}, f"pr {pull.number} tail")
            pull.commits += 1
        self.pulls.append(pull)
        return pull

    def land(self, pull: PullRequest) -> bool:
        """Squash and merge: one commit on main whose tree is main merged with the pull
        request (what a forge does, whether or not it updated the branch first)."""
        main = self.tip()
        merged = self.repo.sandbox.run_git("merge-tree", "--write-tree", main, pull.ref,
                                           cwd=self.repo.path, check=False)
        if merged.returncode != 0:
            return False  # conflicts: it stays open
        squash = self.repo.git("commit-tree", merged.stdout.split()[0], "-p", main,
                               "-m", f"Pull request #{pull.number}")
        self.repo.git("update-ref", "refs/heads/main", squash, main)
        pull.landed = True
        wanted = [f"{squash}:{path}" for path in pull.touched or self._files_of(pull)]
        for path, text in zip([w.split(":", 1)[1] for w in wanted], self._blobs(wanted),
                              strict=True):
            self.main[path] = text.splitlines()
        self.hot += [(p, n) for p, lines in pull.touched.items() for n in lines]
        return True

    def _files_of(self, pull: PullRequest) -> list[str]:
        return self.repo.git("diff", "--name-only", pull.fork, pull.ref).split()

    def _blobs(self, specs: list[str]) -> list[str]:
        return [self.repo.git("cat-file", "blob", spec) for spec in specs]

    def add_extra_work(self, pull: PullRequest) -> None:
        path = f"src/pr{pull.number}-followup.txt"
        self._commit(pull.ref, f"{pull.ref}^0", {path: [f"follow-up {self._word()}"]},
                     f"pr {pull.number} follow-up")
        pull.extra_work = True


def grow(history: History, pulls: int, main_commits: int) -> None:
    """Interleave target work, pull requests opening and pull requests landing."""
    rng = history.rng
    waiting: list[tuple[int, PullRequest]] = []
    steps = main_commits + pulls
    opened = 0
    for step in range(steps):
        if opened < pulls and rng.random() < pulls / steps * 1.3:
            pull = history.open_pull()
            opened += 1
            if rng.random() < 0.8:  # most land, some after a long review
                waiting.append((step + rng.randint(3, 40), pull))
            continue
        history.noise()
        for due, pull in [w for w in waiting if w[0] <= step]:
            waiting.remove((due, pull))
            if history.land(pull) and rng.random() < 0.2:
                history.add_extra_work(pull)
    history.flush()


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 23, 37])
def test_squash_merged_pull_requests_are_recognised_on_realistic_histories(
        repo, vwt, seed: int) -> None:
    repo.git("switch", "-q", "--detach")
    history = History(repo, seed)
    grow(history, pulls=48, main_commits=420)
    for pull in history.pulls:
        vwt.new(pull.name, "--from", pull.fork, "--no-fetch")
        repo.git("reset", "-q", "--hard", pull.ref, cwd=repo.checkout(pull.name))
    rows = {row["name"]: row for row in vwt.list()}

    landed = [p for p in history.pulls if p.landed and not p.extra_work]
    controls = [p for p in history.pulls if not p.landed or p.extra_work]
    recognised = [p for p in landed if rows[p.name]["integrated"] is not None]
    false_positives = [p.name for p in controls if rows[p.name]["integrated"] is not None]
    reasons: dict[str, int] = {}
    for p in recognised:
        reasons[rows[p.name]["integrated"]] = reasons.get(rows[p.name]["integrated"], 0) + 1
    behind = sorted(rows[p.name]["behind"] for p in history.pulls)
    print(f"\nseed {seed}: {len(recognised)}/{len(landed)} landed recognised {reasons}; "
          f"{len(false_positives)} of {len(controls)} controls called integrated "
          f"({sum(p.extra_work for p in controls)} landed plus new work, "
          f"{sum(not p.landed for p in controls)} never landed); "
          f"main {history.tip()[:8]}, behind {behind[0]}..{behind[-1]}")
    assert false_positives == []
    assert len(recognised) >= 0.95 * len(landed), [p.name for p in landed if p not in recognised]
    assert min(len(landed), len(controls)) >= 5  # the history exercised both sides
    assert behind[-1] >= 200
