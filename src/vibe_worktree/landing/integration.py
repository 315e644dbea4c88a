"""Is a worktree's committed work already in the target branch? (SPEC §8 Integration)

Reasons are tried cheapest first, each against T and then `<remote>/T`, and the first
that holds is reported, so the expensive ones (a merge in the object store, patch ids)
only run for work that the cheap ones could not place.
"""

from __future__ import annotations

from .. import git as g
from .. import target as _target
from ..tuples import NamedTuple

SAME_COMMIT = "same_commit"
ANCESTOR = "ancestor"
SAME_TREE = "same_tree"
NO_ADDED_CHANGES = "no_added_changes"
PATCH_EQUIVALENT = "patch_equivalent"
REASONS = (SAME_COMMIT, ANCESTOR, SAME_TREE, NO_ADDED_CHANGES, PATCH_EQUIVALENT)


class Tips(NamedTuple):
    """T and `<remote>/T` of one repository with their trees, read once per listing."""

    target: _target.Target
    commits: tuple[str, ...]  # T's tip, then `<remote>/T`'s when it differs
    trees: tuple[str, ...]  # the tree of each, in the same order
    merge_drivers: tuple[str, ...]  # the repository's own, neutralised in merges

    @property
    def branch(self) -> str:
        return self.target.branch


def read_tips(git: g.Git, into: str | None = None) -> Tips | None:
    """The repository's target tips, or None when it has no target branch."""
    found = _target.resolve(git, into)
    if found is None or found.commit is None:
        return None
    commits = tuple(found.tips())
    trees = tuple(git.out("rev-parse", *(f"{c}^{{tree}}" for c in commits)).split())
    return Tips(found, commits, trees, g.repo_merge_drivers(git))


class Integration(NamedTuple):
    target: str  # T's short name
    behind: int  # commits of T not in HEAD
    integrated: str | None  # the first reason that holds, or None


def check(git: g.Git, head: str, tips: Tips) -> Integration:
    """The §8 integration of `head` against `tips` (git runs in the worktree or repo)."""
    behind, own = g.left_right_counts(git, tips.commits[0], head)
    return Integration(tips.branch, behind, _reason(git, head, tips, behind, own))


def _reason(git: g.Git, head: str, tips: Tips, behind: int, own: int) -> str | None:
    if head in tips.commits:
        return SAME_COMMIT
    if own == 0 or any(g.is_ancestor(git, head, tip) for tip in tips.commits[1:]):
        return ANCESTOR
    if g.tree_of(git, head) in tips.trees:
        return SAME_TREE
    merging = git._replace(neutralised_merge_drivers=tips.merge_drivers)
    for tip, tree in zip(tips.commits, tips.trees, strict=True):
        if g.merge_tree(merging, tip, head).tree == tree:
            return NO_ADDED_CHANGES
    for i, tip in enumerate(tips.commits):
        if i == 0 and behind == 0:
            continue  # T has nothing HEAD lacks: no commit of T can be equivalent
        if g.cherry_all_equivalent(git, tip, head):
            return PATCH_EQUIVALENT
    return None



def integrated(git: g.Git, head: str, into: str | None = None) -> str | None:
    """The reason `head` is integrated into the repository's target, or None."""
    tips = read_tips(git, into)
    return None if tips is None else check(git, head, tips).integrated
