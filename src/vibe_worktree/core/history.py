"""Questions about many worktrees' histories against one target tip T, answered from one
walk (`rev-list HEADs ^T`) instead of a git process per worktree: commits since base
(SPEC §3's `ahead`) and merge bases with T.

The walk holds each HEAD's own commits, those T lacks. Their parents outside the walk are
the fork points: commits of T, and every commit a HEAD shares with T is an ancestor of one
of its fork points. So a HEAD with one fork point has that as its merge base with T, and a
HEAD whose only fork point is its base commit has exactly its own commits in `base..HEAD`
(none of them can be an ancestor of the base, which is in T). That is how a worktree made
from T and then committed to looks. Any other shape (T merged in, a rebase onto a newer T,
a base that is not the fork point) is answered the plain way, with a git process of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import git as g


def commits_since(git: g.Git, pairs: Sequence[tuple[str, str]], tip: str) -> list[int]:
    """`rev-list --count base..head` for each (head, base)."""
    counts: list[int | None] = [0 if head == base else None for head, base in pairs]
    graph = _own_commits(git, [head for (head, _b), n in zip(pairs, counts, strict=True)
                               if n is None], tip)
    for i, (head, base) in enumerate(pairs):
        if counts[i] is None and head in graph:
            seen, forks = _walk(graph, head)
            if forks == {base}:
                counts[i] = len(seen)
    return [n if n is not None else g.count_commits(git, base, head)
            for (head, base), n in zip(pairs, counts, strict=True)]


def merge_bases(git: g.Git, heads: Sequence[str], tip: str) -> list[str | None]:
    """`merge-base head tip` for each head; None when a head's history is unrelated to T's."""
    graph = _own_commits(git, heads, tip)
    found: list[str | None] = []
    for head in heads:
        if head not in graph:  # in T's history: it is its own merge base
            found.append(head)
            continue
        forks = _walk(graph, head)[1]
        if len(forks) <= 1:
            found.append(next(iter(forks), None))
        else:  # several: git picks the best of them
            found.append(g.merge_base(git, head, tip))
    return found


def _own_commits(git: g.Git, heads: Sequence[str], tip: str) -> dict[str, g.GraphCommit]:
    return g.commit_graph(git, heads, [tip]) if heads else {}


def _walk(graph: dict[str, g.GraphCommit], head: str) -> tuple[set[str], set[str]]:
    """The commits of `graph` that `head` reaches, and their parents outside it."""
    seen = {head}
    forks: set[str] = set()
    todo = [head]
    while todo:
        for parent in graph[todo.pop()].parents:
            if parent not in graph:
                forks.add(parent)
            elif parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen, forks
