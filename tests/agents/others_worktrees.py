"""Worktrees made the way other tools make them, and a fingerprint of everything a move must
keep, for the `vwt foreign` and `vwt adopt` tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from conftest import Repo, tree_files


def claude_code_worktree(repo: Repo, name: str) -> Path:
    """As `claude --worktree NAME` makes one: `.claude/worktrees/NAME`, branch `worktree-NAME`."""
    path = repo.path / ".claude" / "worktrees" / name
    repo.git("worktree", "add", "-q", "-b", f"worktree-{name}", str(path), "HEAD")
    return path


def codex_worktree(repo: Repo, codex_home: Path, tag: str = "a1b2") -> Path:
    """As the Codex app makes one: `<codex home>/worktrees/<id>/<repo>`, a detached HEAD."""
    path = codex_home / "worktrees" / tag / repo.path.name
    path.parent.mkdir(parents=True, exist_ok=True)
    repo.git("worktree", "add", "-q", "--detach", str(path), "HEAD")
    return path


def cursor_worktree(repo: Repo, home: Path, name: str) -> Path:
    """As Cursor makes one: `~/.cursor/worktrees/<repo>/<name>` on a branch of its own."""
    path = home / ".cursor" / "worktrees" / repo.path.name / name
    path.parent.mkdir(parents=True, exist_ok=True)
    repo.git("worktree", "add", "-q", "-b", f"cursor-{name}", str(path), "HEAD")
    return path


def plain_worktree(repo: Repo, path: Path, branch: str) -> Path:
    repo.git("worktree", "add", "-q", "-b", branch, str(path), "HEAD")
    return path


def busy_worktree(repo: Repo, path: Path) -> None:
    """Work of every kind: a commit, a staged change, an unstaged one, an untracked file, an
    ignored one, a stash entry."""
    repo.commit("work in progress", {"feature.py": "x = 1\n"}, cwd=path)
    repo.write(".gitignore", "*.log\n", base=path)
    repo.git("add", ".gitignore", cwd=path)
    repo.commit("ignore logs", cwd=path)
    repo.write("stashed.txt", "stash me\n", base=path)
    repo.git("add", "stashed.txt", cwd=path)
    repo.git("stash", "push", "-q", "-m", "kept aside", cwd=path)
    repo.write("staged.txt", "staged\n", base=path)
    repo.git("add", "staged.txt", cwd=path)
    repo.write("README.md", "# changed, not staged\n", base=path)
    repo.write("notes/untracked.txt", "untracked\n", base=path)
    repo.write("debug.log", "ignored\n", base=path)


def fingerprint(repo: Repo, path: Path) -> dict[str, Any]:
    """Everything of a worktree that a move must keep: its index (bytes first, before any
    git command could refresh it), files (ignored ones included) and their mtimes, status,
    stash, branch and HEAD."""
    admin = Path(repo.git("rev-parse", "--absolute-git-dir", cwd=path))
    index = (admin / "index").read_bytes()
    quiet = {"GIT_OPTIONAL_LOCKS": "0"}

    def git(*args: str) -> str:
        return repo.sandbox.run_git(*args, cwd=path, env_extra=quiet).stdout

    mtimes = {}
    for folder, subfolders, files in os.walk(path):
        subfolders[:] = [d for d in subfolders if d != ".git"]
        for name in files:
            if name != ".git":
                full = Path(folder) / name
                mtimes[str(full.relative_to(path))] = full.stat().st_mtime_ns
    return {
        "index": index,
        "ls_files": git("ls-files", "-s"),
        "status": git("status", "--porcelain=v2", "--branch", "--untracked-files=all",
                      "--ignored=matching"),
        "stash": git("stash", "list", "--format=%H %gs"),
        "head": git("rev-parse", "--symbolic-full-name", "HEAD", "HEAD"),
        "branches": git("for-each-ref", "refs/heads"),
        "files": tree_files(path),
        "mtimes": mtimes,
    }


def worktree_list(repo: Repo) -> str:
    """`git worktree list --porcelain`, one worktree a paragraph, sorted."""
    out = repo.git("worktree", "list", "--porcelain")
    return "\n\n".join(sorted(out.split("\n\n")))


def process_inside(path: Path) -> subprocess.Popen[bytes]:
    """A process whose current directory is inside `path` (kill it when done)."""
    inner = path / "src"
    inner.mkdir(exist_ok=True)
    return subprocess.Popen(["sleep", "60"], cwd=inner)
