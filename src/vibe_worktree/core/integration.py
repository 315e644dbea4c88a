"""Is a worktree's committed work already in the target branch? (SPEC §8 Integration)

Reasons are tried cheapest first, each against T and then `<remote>/T`, and the first
that holds is reported, so the expensive ones (a merge in the object store, patch ids)
only run for work that the cheap ones could not place.
"""

from __future__ import annotations

from . import equivalence
from . import git as g
from . import target as _target
from .light import NamedTuple

SAME_COMMIT = "same_commit"
ANCESTOR = "ancestor"
SAME_TREE = "same_tree"
NO_ADDED_CHANGES = "no_added_changes"
PATCH_EQUIVALENT = "patch_equivalent"
SQUASHED = "squashed"
REASONS = (SAME_COMMIT, ANCESTOR, SAME_TREE, NO_ADDED_CHANGES, PATCH_EQUIVALENT, SQUASHED)


class Tips(NamedTuple):
    """T and `<remote>/T` of one repository with their trees, read once per listing."""

    target: _target.Target
    commits: tuple[str, ...]  # T's tip, then `<remote>/T`'s when it differs
    trees: tuple[str, ...]  # the tree of each, in the same order
    merge_drivers: tuple[str, ...]  # the repository's own, neutralised in merges
    # `<remote>/T` is an ancestor of T: whatever it contains, T contains
    remote_in_target: bool = False

    @property
    def branch(self) -> str:
        return self.target.branch

    @property
    def history_tips(self) -> tuple[str, ...]:
        """The tips whose history is worth searching: `<remote>/T` only when T lacks some
        of it (an ancestor of T adds no commit, so no ancestor or patch to find)."""
        return self.commits[:1] if self.remote_in_target else self.commits


def read_tips(git: g.Git, into: str | None = None) -> Tips | None:
    """The repository's target tips, or None when it has no target branch."""
    found = _target.resolve(git, into)
    if found is None or found.commit is None:
        return None
    commits = tuple(found.tips())
    trees = tuple(git.out("rev-parse", *(f"{c}^{{tree}}" for c in commits)).split())
    contained = len(commits) > 1 and g.is_ancestor(git, commits[1], commits[0])
    return Tips(found, commits, trees, g.repo_merge_drivers(git), contained)


class Integration(NamedTuple):
    target: str  # T's short name
    behind: int  # commits of T not in HEAD
    integrated: str | None  # the first reason that holds, or None


def check(git: g.Git, head: str, tips: Tips) -> Integration:
    """The §8 integration of `head` against `tips` (git runs in the worktree or repo)."""
    found = cheap_check(git, head, tips)
    if isinstance(found, Integration):
        return found
    return finish_checks(git, [(head, found)], tips)[0]


def cheap_check(git: g.Git, head: str, tips: Tips,
                counts: tuple[int, int] | None = None) -> Integration | int:
    """`same_commit` and `ancestor`, one `rev-list` (plus one per distinct `<remote>/T`):
    the Integration when they decide, else `behind` for `finish_checks`. `counts`:
    (behind, own) against T already known (from `git status`), so no `rev-list` for T."""
    behind, own = counts or g.left_right_counts(git, tips.commits[0], head)
    if head in tips.commits:
        return Integration(tips.branch, behind, SAME_COMMIT)
    if own == 0 or any(g.is_ancestor(git, head, tip) for tip in tips.history_tips[1:]):
        return Integration(tips.branch, behind, ANCESTOR)
    return behind


def finish_checks(git: g.Git, undecided: list[tuple[str, int]], tips: Tips
                  ) -> list[Integration]:
    """The expensive reasons for many (head, behind) of one repository: one `cat-file` for
    all trees, one `merge-tree --stdin` for all merges, then patch ids for what is left
    (`equivalence`: a few processes per tip, however many heads)."""
    reasons: list[str | None] = [None] * len(undecided)
    heads = [head for head, _behind in undecided]
    for i, tree in enumerate(g.trees_of(git, heads)):
        if tree in tips.trees:
            reasons[i] = SAME_TREE
    left = [i for i, reason in enumerate(reasons) if reason is None]
    merging = git._replace(neutralised_merge_drivers=tips.merge_drivers)
    pairs = [(tip, heads[i]) for i in left for tip in tips.commits]
    merged = iter(g.merge_trees(merging, pairs))
    for i in left:
        for tree in tips.trees:
            if next(merged).tree == tree and reasons[i] is None:
                reasons[i] = NO_ADDED_CHANGES
    left = [i for i, reason in enumerate(reasons) if reason is None]
    found = [equivalence.NOTHING] * len(left)
    for n, tip in enumerate(tips.history_tips):
        # T's tip: only heads lacking some of T's commits can have an equivalent in them
        asked = [k for k, i in enumerate(left) if n > 0 or undecided[i][1] > 0]
        answers = equivalence.against(merging, [heads[left[k]] for k in asked], tip)
        for k, answer in zip(asked, answers, strict=True):
            found[k] = equivalence.Found(found[k].patch_equivalent or answer.patch_equivalent,
                                         found[k].squashed or answer.squashed)
    for i, answer in zip(left, found, strict=True):
        reasons[i] = (PATCH_EQUIVALENT if answer.patch_equivalent
                      else SQUASHED if answer.squashed else None)
    return [Integration(tips.branch, behind, reason)
            for (_head, behind), reason in zip(undecided, reasons, strict=True)]


def integrated(git: g.Git, head: str, into: str | None = None) -> str | None:
    """The reason `head` is integrated into the repository's target, or None."""
    tips = read_tips(git, into)
    return None if tips is None else check(git, head, tips).integrated
