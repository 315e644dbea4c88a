"""Batched git questions answer exactly what one git process per question would."""

from __future__ import annotations

from vibe_worktree.core import git as g


def test_changed_paths_of_many_pairs_equal_one_diff_each(repo) -> None:
    first = repo.rev("main")
    odd = {"with space.txt": "1\n", "new\nline.txt": "2\n", "dir/deep/ü.txt": "3\n"}
    second = repo.commit("odd names", odd)
    third = repo.commit("one more", {"with space.txt": "changed\n", "plain.txt": "4\n"})
    repo.git("rm", "-q", "new\nline.txt")
    fourth = repo.commit("a deletion")
    tree = repo.git("rev-parse", f"{third}^{{tree}}")
    git = g.Git(str(repo.path))
    pairs = [(first, second), (second, second), (second, third), (first, tree),
             (tree, fourth), (fourth, first), (third, third)]
    expected = [g.changed_paths(git, old, new) for old, new in pairs]
    assert expected[1] == [] and "new\nline.txt" in expected[0]
    assert g.changed_paths_many(git, pairs) == expected
