"""Property-based tests of `vwt conflicts` (SPEC §13) on real repositories: whatever three
sessions and the target branch do to a handful of files and folders (edits, deletions, a
file turned into a folder and back, renames; committed or not), every pair's `overlap` is
exactly the paths both changed (a file against a folder counting as both changing the
file's path), `conflicts` is a subset of it, non-empty exactly when git's own merge of the
two works conflicts, and every path named is one of the repository's, never git's
stand-in `name~<label>`."""

from __future__ import annotations

import itertools
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

LINES = "".join(f"line {i}\n" for i in range(1, 13))
BASE = {"lines.txt": LINES, "a.txt": "a\n", "df": "a file\n", "dir/x.txt": "x\n"}
NAMES = ("alpha", "beta", "gamma")

# (what, path, variant): each one a thing a session does to its checkout
moves = st.one_of(
    st.tuples(st.just("edit_line"), st.just("lines.txt"), st.integers(0, 3)),
    st.tuples(st.just("write"),
              st.sampled_from(["a.txt", "new", "new/inner.txt", "df", "df/inner.txt", "dir",
                               "dir/x.txt", "dir/y.txt"]),
              st.integers(0, 1)),
    st.tuples(st.just("delete"), st.sampled_from(["a.txt", "df", "dir", "lines.txt"]),
              st.just(0)),
    st.tuples(st.just("rename"), st.sampled_from(["lines.txt", "a.txt"]), st.integers(0, 1)),
)
Move = tuple[str, str, int]
sessions = st.lists(st.tuples(st.lists(moves, max_size=3), st.booleans()),
                    min_size=3, max_size=3)
examples_ = st.tuples(sessions, st.lists(moves, max_size=2))
SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

FILE_AGAINST_FOLDER = ([([("write", "df", 1)], False), ([("write", "df/inner.txt", 0)], True),
                        ([], False)], [])
RENAME_AGAINST_DELETE = ([([("rename", "lines.txt", 0)], True),
                          ([("delete", "lines.txt", 0)], False),
                          ([("rename", "lines.txt", 1)], False)], [])


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def apply(repo: Any, where: Path, move: Move) -> None:
    what, rel, variant = move
    target = where / rel
    if what == "edit_line":
        if target.is_file():
            lines = target.read_text().splitlines(keepends=True)
            lines[variant * 3] = f"{where.name} {variant}\n"
            target.write_text("".join(lines))
    elif what == "delete":
        remove(target)
    elif what == "rename":
        if target.is_file():
            remove(where / f"moved-{variant}")
            os.replace(target, where / f"moved-{variant}")
    else:  # write: whatever stands in the way (a file where a folder goes, or the reverse)
        for folder in itertools.accumulate(rel.split("/")[:-1], lambda a, b: f"{a}/{b}"):
            if (where / folder).exists() and not (where / folder).is_dir():
                remove(where / folder)
        if target.is_dir():
            remove(target)
        repo.write(rel, f"{where.name} writes {rel} ({variant})\n", base=where)


def work_commit(repo: Any, where: Path) -> str:
    """The work as a snapshot records it (HEAD plus everything uncommitted), for the oracle:
    staged into a temporary index, so the checkout stays as it is. The copy keeps the
    index's mtime: git tells a same-size edit in the index's second by it."""
    index = where.parent / f".{where.name}-oracle-index"
    env = {"GIT_INDEX_FILE": str(index)}
    shutil.copy2(repo.git("rev-parse", "--path-format=absolute", "--git-path", "index",
                         cwd=where), index)
    try:
        repo.sandbox.run_git("add", "-A", cwd=where, env_extra=env)
        tree = repo.sandbox.run_git("write-tree", cwd=where, env_extra=env).stdout.strip()
        return repo.git("commit-tree", tree, "-p", "HEAD", "-m", "work", cwd=where)
    finally:
        index.unlink()


def changed(repo: Any, base: str, commit: str) -> set[str]:
    return set(repo.git("diff-tree", "-r", "--no-renames", "--name-only", base, commit)
               .split("\n")) - {""}


def folders(path: str) -> set[str]:
    parts = path.split("/")
    return {"/".join(parts[:i]) for i in range(1, len(parts))}


def expected_overlap(mine: set[str], theirs: set[str]) -> list[str]:
    """Paths both changed; a file one changed where the other changed something inside it
    counts as both changing it."""
    inside_mine = set().union(*map(folders, mine)) if mine else set()
    inside_theirs = set().union(*map(folders, theirs)) if theirs else set()
    return sorted((mine & theirs) | (mine & inside_theirs) | (theirs & inside_mine))


def merge_conflicts(repo: Any, ours: str, theirs: str) -> bool:
    result = repo.sandbox.run_git("merge-tree", "--write-tree", "--no-messages", ours, theirs,
                                  cwd=repo.path, check=False)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode == 1


def check_example(make_repo: Any, vwt: Any, n: int, example: Any) -> None:
    works, main_moves = example
    repo = make_repo(f"ex{n}/repo", commits=1)
    repo.commit("base", BASE)
    home = repo.path.parent / "vibe"
    env = {"VIBE_HOME": str(home)}
    checkouts = {}
    for name, (own, commit) in zip(NAMES, works, strict=True):
        made = vwt("new", name, "--no-fetch", "--json", cwd=repo.path, env_extra=env)
        assert made.code == 0, str(made)
        checkouts[name] = Path(made.json()["path"])
        for move in own:
            apply(repo, checkouts[name], move)
        if commit:
            repo.commit(f"{name}'s work", cwd=checkouts[name])
    for move in main_moves:
        apply(repo, repo.path, move)
    if main_moves:
        repo.commit("main moves on")
    result = vwt("conflicts", "--json", cwd=repo.path, env_extra=env)
    assert result.code == 0, str(result)
    doc = json.loads(result.out)
    base = repo.rev("main~1") if main_moves else repo.rev("main")
    commits = {name: work_commit(repo, path) for name, path in checkouts.items()}
    paths = {name: changed(repo, base, commit) for name, commit in commits.items()}
    rows = {row["name"]: row for row in doc["worktrees"]}
    for name in NAMES:
        row = rows[name]
        assert row["error"] is None and row["changed"] == len(paths[name]), (name, row)
        assert all("~" not in p for p in row["target_conflicts"]), row
        assert bool(row["target_conflicts"]) == merge_conflicts(repo, commits[name], "main"), row
    found = {(p["a"], p["b"]): p for p in doc["pairs"]}
    for a, b in itertools.combinations(NAMES, 2):
        overlap = expected_overlap(paths[a], paths[b])
        pair = found.get((a, b))
        if not overlap:
            assert pair is None, (pair, paths[a], paths[b])
            continue
        assert pair is not None and pair["overlap"] == overlap, (a, b, pair, overlap)
        assert set(pair["conflicts"]) <= set(pair["overlap"]), pair
        assert pair["conflicts"] == sorted(pair["conflicts"]), pair
        assert bool(pair["conflicts"]) == merge_conflicts(repo, commits[a], commits[b]), pair


def _counter(vwt: Any) -> Any:
    """One counter per test (the fixtures live as long as the test, across its examples)."""
    if not hasattr(vwt, "_examples"):
        vwt._examples = itertools.count()
    return vwt._examples


@settings(max_examples=10, **SETTINGS)  # type: ignore[arg-type]
@given(examples_)
@example(FILE_AGAINST_FOLDER)
@example(RENAME_AGAINST_DELETE)
def test_pairs_overlap_where_both_changed_and_only_conflict_there(  # type: ignore[no-untyped-def]
        make_repo, vwt, example_) -> None:
    check_example(make_repo, vwt, next(_counter(vwt)), example_)


@pytest.mark.slow
@settings(max_examples=80, **SETTINGS)  # type: ignore[arg-type]
@given(examples_)
def test_many_sessions_overlap_where_both_changed_and_only_conflict_there(  # type: ignore[no-untyped-def]
        make_repo, vwt, example_) -> None:
    check_example(make_repo, vwt, next(_counter(vwt)), example_)
