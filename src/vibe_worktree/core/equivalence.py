"""Patch equivalence and squash recognition for many worktrees of one repository at once
(SPEC §8 `patch_equivalent` and `squashed`).

`git cherry` per worktree would recompute the patch ids of the same target commits for
every worktree. Here, per repository and target tip, a fixed handful of git processes
answer for all the worktrees a listing left undecided:

1. `rev-list` of the worktrees' own commits (reachable from their HEADs, not from the tip),
   with parents, which also gives each one's fork points (its commits' parents in T);
2. `rev-list` of the tip's commits since the oldest fork point (`merge-base --octopus`);
3. one `diff-tree --stdin` for every patch needed: each commit of both lists, and each
   branch's combined change (merge base to HEAD), then one `patch-id --stable` for them all;
4. only for branches that still have candidates, one `merge-tree --stdin` (see below).

A branch is `squashed` when its combined change landed on T as one commit S after the merge
base: either S's patch id is the combined change's (the squash was made from the merge base,
or T did not touch the lines around it), or merging HEAD into S's parent gives exactly S's
tree (the forge merged or rebased the pull request onto a newer T first, so the context
lines of the patch differ). Candidates for the second test are T's commits that change
no file the branch leaves alone and share changed lines with it; at most `MERGE_CANDIDATES`
per branch, those sharing most lines first.
Later commits on T that edit the same lines again do not matter: both tests look at S
itself, not at T's tip. A branch with one more commit of new work after the squash is not
`squashed`: its combined change is no longer S's, and merging it into S's parent adds the
new work.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import git as g
from .light import NamedTuple

MERGE_CANDIDATES = 8  # per branch: commits of T touching the same files, tried by merging


class Found(NamedTuple):
    patch_equivalent: bool  # every own commit has a patch-equivalent commit in T
    squashed: bool  # the combined change is one commit of T


NOTHING = Found(False, False)


class _Branch(NamedTuple):
    own: tuple[str, ...]  # its commits that T lacks, merges excluded
    forks: frozenset[str]  # the parents of those commits that T has
    base: str | None  # the merge base with the tip


def against(git: g.Git, heads: Sequence[str], tip: str) -> list[Found]:
    """`Found` for each head against one target tip. `git` neutralises the repository's
    merge drivers (a merge that would run one reports a conflict instead)."""
    if not heads:
        return []
    own_graph = g.commit_graph(git, heads, [tip])
    branches = {head: _branch(git, own_graph, head, tip) for head in dict.fromkeys(heads)}
    forks = sorted(set().union(*(b.forks for b in branches.values())))
    if not forks:
        return [NOTHING for _head in heads]
    oldest = forks[0] if len(forks) == 1 else g.octopus_base(git, forks)
    if oldest is None:  # T holds unrelated histories: let git cherry bound each walk
        return [Found(g.cherry_all_equivalent(git, tip, head), False) for head in heads]
    upstream = g.commit_graph(git, [tip], [oldest])
    ids = _PatchIds(git, upstream, own_graph, branches)
    found = {head: ids.found(head, branch) for head, branch in branches.items()}
    _squashed_by_merging(git, ids, branches, found)
    return [found[head] for head in heads]


def _branch(git: g.Git, graph: dict[str, g.GraphCommit], head: str, tip: str) -> _Branch:
    own: list[str] = []
    forks: set[str] = set()
    seen, todo = {head}, [head]
    while todo:
        commit = todo.pop()
        if commit not in graph:
            forks.add(commit)
            continue
        parents = graph[commit].parents
        if len(parents) == 1:
            own.append(commit)
        todo += [p for p in parents if p not in seen]
        seen.update(parents)
    if len(forks) == 1:
        base: str | None = next(iter(forks))
    else:  # T merged into the branch, or unrelated histories
        base = g.merge_base(git, tip, head) if forks else None
    return _Branch(tuple(own), frozenset(forks), base)


class _PatchIds:
    """The patch ids of every commit and combined change involved, in one pass."""

    def __init__(self, git: g.Git, upstream: dict[str, g.GraphCommit],
                 own_graph: dict[str, g.GraphCommit], branches: dict[str, _Branch]) -> None:
        self.upstream = upstream
        diffs: list[tuple[str, str | None]] = [
            (commit, None) for commit, info in upstream.items() if len(info.parents) == 1]
        diffs += [(commit, None) for commit in dict.fromkeys(
            c for b in branches.values() for c in b.own) if commit not in upstream]
        diffs += [(head, b.base) for head, b in branches.items() if b.base]
        texts = g.patches(git, diffs)
        pids = g.patch_ids(git, texts)
        self.commit_ids = {c: pid for (c, base), pid in zip(diffs, pids, strict=True)
                           if base is None}
        self.combined = {c: (pid, _files(text)) for (c, base), pid, text
                         in zip(diffs, pids, texts, strict=True) if base is not None}
        self.texts = {c: text for (c, base), text in zip(diffs, texts, strict=True)
                      if base is None and c in upstream}  # T's commits
        self.files = {c: _files(text) for c, text in self.texts.items()}
        self.combined_texts = {c: text for (c, base), text in zip(diffs, texts, strict=True)
                               if base is not None}
        self._sides: dict[frozenset[str], tuple[list[str], set[str]]] = {}

    def side(self, forks: frozenset[str]) -> tuple[list[str], set[str]]:
        """T's commits a branch forked at `forks` lacks (non-merge, newest first), and their
        patch ids: what `git cherry` compares a branch's commits with."""
        if forks not in self._sides:
            below: set[str] = set()
            todo = [f for f in forks if f in self.upstream]
            while todo:
                commit = todo.pop()
                if commit in below:
                    continue
                below.add(commit)
                todo += [p for p in self.upstream[commit].parents if p in self.upstream]
            commits = [c for c, info in self.upstream.items()
                       if c not in below and len(info.parents) == 1]
            ids = {self.commit_ids.get(c) for c in commits}
            self._sides[forks] = (commits, {pid for pid in ids if pid is not None})
        return self._sides[forks]

    def found(self, head: str, branch: _Branch) -> Found:
        _commits, side_ids = self.side(branch.forks)
        own_ids = [self.commit_ids.get(c) for c in branch.own]
        equivalent = bool(own_ids) and all(pid is not None and pid in side_ids
                                           for pid in own_ids)
        combined = self.combined.get(head)
        squashed = combined is not None and combined[0] is not None and combined[0] in side_ids
        return Found(equivalent, squashed)


def _files(patch: str) -> frozenset[str]:
    """The `diff --git` lines of a patch: which files it changes (compared, not parsed)."""
    return frozenset(line for line in patch.splitlines() if line.startswith("diff --git "))


_FILE_LINES = ("+++ a/", "+++ b/", "--- a/", "--- b/", "+++ /dev/null", "--- /dev/null")


def _changed_lines(patch: str) -> set[str]:
    """The added and removed lines of a patch (its file names left out)."""
    return {line for line in patch.splitlines()
            if line[:1] in "+-" and line and not line.startswith(_FILE_LINES)}


def _squashed_by_merging(git: g.Git, ids: _PatchIds, branches: dict[str, _Branch],
                         found: dict[str, Found]) -> None:
    """Merge HEAD into the parent of each candidate S; the same tree as S: squashed.

    Candidates: T's commits that change no file the branch leaves alone and share added or
    removed lines with its combined change, most shared lines first. The merge decides."""
    tries: list[tuple[str, str]] = []  # (head, S)
    by_line: dict[str, list[str]] | None = None
    for head, branch in branches.items():
        combined = ids.combined.get(head)
        if found[head] != NOTHING or combined is None or not combined[1]:
            continue
        if by_line is None:
            by_line = {}
            for commit, text in ids.texts.items():
                for line in _changed_lines(text):
                    by_line.setdefault(line, []).append(commit)
        commits, _ids = ids.side(branch.forks)
        allowed = set(commits)
        shared: dict[str, int] = {}
        for line in _changed_lines(ids.combined_texts[head]):
            for commit in by_line.get(line, ()):
                if commit in allowed and ids.files[commit] <= combined[1]:
                    shared[commit] = shared.get(commit, 0) + 1
        order = {commit: n for n, commit in enumerate(commits)}  # newest first
        best = sorted(shared, key=lambda c: (-shared[c], order[c]))[:MERGE_CANDIDATES]
        tries += [(head, c) for c in best]
    merged = g.merge_trees(git, [(ids.upstream[s].parents[0], head) for head, s in tries])
    for (head, s), result in zip(tries, merged, strict=True):
        if result.tree is not None and result.tree == ids.upstream[s].tree:
            found[head] = Found(found[head].patch_equivalent, True)
