"""Answers for many worktrees from one walk equal git's own, one process each
(`rev-list --count base..HEAD`, `merge-base HEAD T`), on real histories of every shape a
worktree's branch can take."""

from __future__ import annotations

import random

from vibe_worktree.core import git as g
from vibe_worktree.core.history import _walk, commits_since, merge_bases


def _commit(repo, *parents: str, message: str = "c") -> str:
    tree = repo.git("hash-object", "-t", "tree", "-w", "--stdin")  # the empty tree
    args = [arg for parent in parents for arg in ("-p", parent)]
    return repo.git("commit-tree", tree, *args, "-m", message)


def _chain(repo, start: str | None, length: int) -> list[str]:
    made: list[str] = []
    tip = start
    for n in range(length):
        tip = _commit(repo, *([tip] if tip else []), message=f"c{n}")
        made.append(tip)
    return made


def _shapes(repo, rng: random.Random, trunk: list[str]) -> list[tuple[str, str]]:
    """(head, base) pairs: the common shape many times, and every unusual one."""
    pairs: list[tuple[str, str]] = []
    for _ in range(10):
        base = rng.choice(trunk[:-1])
        own = _chain(repo, base, rng.randint(1, 5))
        pairs.append((own[-1], base))  # committed to since `vwt new`
        pairs.append((base, base))  # nothing yet
        later = trunk[rng.randint(trunk.index(base) + 1, len(trunk) - 1)]
        pairs.append((later, base))  # fast-forwarded: HEAD inside T
        merged = _commit(repo, own[-1], later, message="merge T in")
        pairs.append(([merged, *_chain(repo, merged, rng.randint(0, 2))][-1],
                      base))  # T merged into the branch, maybe committed to since
        rebased = _chain(repo, later, len(own))
        pairs.append((rebased[-1], base))  # rebased by hand onto a newer T
        pairs.append((own[-1], own[0]))  # a base that is not in T
    unrelated = _chain(repo, None, 3)
    pairs.append((unrelated[-1], trunk[3]))  # a history that shares nothing with T
    pairs.append((_commit(repo, unrelated[-1], trunk[5]), trunk[5]))  # one joined to T
    pairs.append((trunk[2], trunk[9]))  # a base ahead of HEAD
    return pairs


def test_counts_equal_rev_list_count_for_every_shape(repo) -> None:
    rng = random.Random(21)
    trunk = _chain(repo, repo.rev("main"), 30)
    pairs = _shapes(repo, rng, trunk)
    git = g.Git(str(repo.path))
    expected = [int(repo.git("rev-list", "--count", f"{base}..{head}")) for head, base in pairs]
    assert commits_since(git, pairs, trunk[-1]) == expected


def test_merge_bases_equal_git_merge_base_for_every_shape(repo) -> None:
    rng = random.Random(8)
    trunk = _chain(repo, repo.rev("main"), 30)
    heads = list(dict.fromkeys(head for head, _base in _shapes(repo, rng, trunk)))
    criss = [_commit(repo, trunk[4], trunk[6]), _commit(repo, trunk[6], trunk[4])]
    heads += [_commit(repo, criss[0], trunk[9]), _commit(repo, criss[1])]
    git = g.Git(str(repo.path))
    expected = [repo.git("merge-base", head, trunk[-1], check=False) or None for head in heads]
    assert merge_bases(git, heads, trunk[-1]) == expected


def test_the_usual_shape_is_answered_from_the_one_walk(repo) -> None:
    trunk = _chain(repo, repo.rev("main"), 10)
    own = _chain(repo, trunk[4], 3)
    merge_of_t = _commit(repo, own[-1], trunk[7])
    graph = g.commit_graph(g.Git(str(repo.path)), [own[-1], merge_of_t], [trunk[-1]])
    assert _walk(graph, own[-1]) == (set(own), {trunk[4]})
    # T merged in forks at a second point: answered the plain way instead
    assert _walk(graph, merge_of_t)[1] == {trunk[4], trunk[7]}
