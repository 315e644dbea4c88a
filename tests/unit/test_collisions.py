"""The pieces of `vwt conflicts`: path rules, and batched merges on real repositories."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vibe_worktree.core import git as g
from vibe_worktree.core.errors import VwtError
from vibe_worktree.landing.collisions import (
    _overlaps,
    meet,
    normalise_path,
    pair_conflicts,
    under,
)


def test_paths_meet_on_a_shared_path_or_a_file_against_a_folder() -> None:
    assert meet(frozenset({"src/a.py"}), frozenset({"src/a.py", "x"}))
    assert meet(frozenset({"lib"}), frozenset({"lib/new.py"})), "a file where a folder appears"
    assert meet(frozenset({"lib/new.py"}), frozenset({"lib"}))
    assert not meet(frozenset({"src/a.py"}), frozenset({"src/b.py"})), "siblings never meet"
    assert not meet(frozenset(), frozenset({"a"}))


def test_under_takes_a_folder_for_everything_in_it() -> None:
    assert under("src/app.py", "src") and under("src", "src") and under("x", "")
    assert not under("srcs/app.py", "src")


def test_path_is_relative_to_the_top_level(tmp_path) -> None:
    top = tmp_path / "top"
    (top / "src").mkdir(parents=True)
    assert normalise_path("./src//app.py", None) == "src/app.py"
    assert normalise_path("src/", None) == "src"
    assert normalise_path(".", None) == ""
    assert normalise_path(str(top / "src" / "app.py"), str(top)) == "src/app.py"
    for bad, toplevel in (("../x", None), (str(tmp_path / "elsewhere"), str(top)),
                          ("/abs", None)):
        with pytest.raises(VwtError) as caught:
            normalise_path(bad, toplevel)
        assert caught.value.exit_code == 2


def test_one_refused_merge_does_not_stop_the_others(repo) -> None:
    base = repo.head()
    ours = repo.commit("ours", {"README.md": "# ours\n"})
    repo.git("checkout", "-q", "-b", "theirs", base)
    theirs = repo.commit("theirs", {"README.md": "# theirs\n"})
    repo.git("checkout", "-q", "--orphan", "stranger")
    stranger = repo.commit("unrelated", {"README.md": "# stranger\n"})
    git = g.Git(str(repo.path))
    found = g.merge_many(git, [(ours, theirs), (ours, stranger), (theirs, base), (ours, theirs)])
    assert isinstance(found[0], g.MergedTree) and found[0].conflicts == ("README.md",)
    assert isinstance(found[1], str) and "unrelated" in found[1]
    assert isinstance(found[2], g.MergedTree) and found[2].conflicts == ()
    assert found[2].tree == repo.git("rev-parse", f"{theirs}^{{tree}}")
    assert found[0].tree is None, "a conflicted merge has no tree to land"
    assert found[3] == found[0]


paths = st.lists(st.sampled_from(["a", "b", "df", "df/x", "df/x/y", "lib", "lib/z", "c/d"]),
                 max_size=4).map(frozenset)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(paths, min_size=2, max_size=4))
def test_overlap_is_what_both_changed_with_a_file_against_a_folder_counted(changed) -> None:
    def inside(path: str, folder: str) -> bool:
        return path.startswith(f"{folder}/")

    found = _overlaps(dict(enumerate(changed)))
    for i in range(len(changed)):
        for j in range(i + 1, len(changed)):
            mine, theirs = changed[i], changed[j]
            want = sorted({p for p in mine if p in theirs or any(inside(q, p) for q in theirs)}
                          | {p for p in theirs if any(inside(q, p) for q in mine)})
            assert found.get((i, j), []) == want, (mine, theirs)
            assert bool(want) == meet(mine, theirs)


def test_pair_conflicts_name_only_overlap_paths_and_never_hide_a_conflict() -> None:
    overlap = ["df", "story.txt"]
    assert pair_conflicts(overlap, g.MergedTree("tree", ())) == ()
    assert pair_conflicts(overlap, g.MergedTree(None, ("df/inner.txt",))) == ("df",)
    assert pair_conflicts(overlap, g.MergedTree(None, ("story.txt", "tale.txt"))) == (
        "story.txt",), "a rename's other name is left out"
    assert pair_conflicts(["story.txt"], g.MergedTree(None, ("tale.txt",))) == ("story.txt",), (
        "conflicting only outside the overlap: it conflicts where the two meet")
    assert pair_conflicts(overlap, "refusing to merge unrelated histories") == tuple(overlap)
    assert pair_conflicts(["df/inner.txt"], g.MergedTree(None, ("df",))) == ("df/inner.txt",)
