"""Computing landed commits in the object store only (SPEC §8 step 5).

Nothing here touches an index, a checkout or a ref: a squash is one
`merge-tree --write-tree` plus one `commit-tree`; a rebase replays each commit the
same way. A conflict is a value, not a half-finished state to clean up.
"""

from __future__ import annotations

from ..core import git as g
from ..core.light import NamedTuple


class Landed(NamedTuple):
    """The commit to put on the target, or the paths that conflict."""

    commit: str | None
    conflicts: tuple[str, ...] = ()


def squash_message(git: g.Git, base: str, head: str, branch: str, message: str | None) -> str:
    """MESSAGE; else the one commit's message; else a summary of the squashed subjects."""
    if message:
        return message
    commits = g.own_commits(git, base, head)
    if len(commits) == 1:
        return commits[0].message
    subjects = "".join(f"* {c.subject}\n" for c in commits)
    return f"Squash {len(commits)} commits of {branch}\n\n{subjects}"


def squash(git: g.Git, onto: str, head: str, message: str) -> Landed:
    """One commit on `onto` whose tree is `onto` merged with `head`."""
    merged = g.merge_tree(git, onto, head)
    if merged.tree is None:
        return Landed(None, merged.conflicts)
    return Landed(g.commit_as_user(git, merged.tree, [onto], message))


def rebase(git: g.Git, onto: str, base: str, head: str) -> Landed:
    """`base..head` replayed onto `onto`, authors and messages kept. Merge commits and
    commits `onto` already has an equivalent of are left out, and a commit that ends up
    changing nothing is dropped, as `git rebase` does."""
    tip = onto
    tree = g.tree_of(git, onto)
    for commit in g.commits_to_replay(git, base, head, onto):
        merged = _cherry_pick(git, tip, tree, commit)
        if merged.tree is None:
            return Landed(None, merged.conflicts)
        if merged.tree == tree:
            continue
        tip = g.commit_as_user(git, merged.tree, [tip], commit.message, commit.author)
        tree = merged.tree
    return Landed(tip)


def _cherry_pick(git: g.Git, tip: str, tip_tree: str, commit: g.CommitInfo) -> g.MergedTree:
    """The three-way merge of `commit` onto `tip` with the commit's parent as the base.

    git 2.39's merge-tree has no `--merge-base`, so the base is forced by history: two
    throw-away commits (the tip's tree and the commit's tree) on one parentless commit
    that holds the parent's tree. They are never referenced; gc drops them.
    """
    if commit.parent is None:
        return g.merge_tree(git, tip, commit.commit)
    base = g.commit_tree(git, f"{commit.parent}^{{tree}}", [], "vwt: replay base")
    ours = g.commit_tree(git, tip_tree, [base], "vwt: replay ours")
    theirs = g.commit_tree(git, f"{commit.commit}^{{tree}}", [base], "vwt: replay theirs")
    return g.merge_tree(git, ours, theirs)
