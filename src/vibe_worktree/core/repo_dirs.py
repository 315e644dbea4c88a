"""Which repository a folder belongs to, read from the `.git` files on the way up, as git
would find it: no git process, and nothing of the git runner imported (`vwt env` looks its
worktree up here; `core.git.discover` asks git when these files do not tell)."""

from __future__ import annotations

import os
import stat

from .light import NamedTuple


class RepoInfo(NamedTuple):
    """A repository as the layout sees it."""

    repo_root: str  # resolved top level of the main working tree
    common_dir: str  # resolved absolute common git dir
    toplevel: str  # top level of the working tree we were called from


_DISCOVERY_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
                  "GIT_DISCOVERY_ACROSS_FILESYSTEM")


def discover_without_git(cwd: str) -> RepoInfo | None:
    """The plain layouts (a main checkout, or a linked worktree of one) found by reading
    `.git` on the way up, as git would; None for anything else, and git is asked instead.

    A listing then costs no process at all.
    """
    start = os.path.realpath(cwd)
    if any(k in os.environ for k in _DISCOVERY_ENV) or "/.git/" in f"{start}/":
        return None
    path = start
    while True:
        dotgit = f"{path}/.git" if path != "/" else "/.git"
        try:
            mode = os.lstat(dotgit).st_mode
        except FileNotFoundError:
            parent = os.path.dirname(path)
            if parent == path:
                return None
            path = parent
            continue
        except OSError:
            return None
        if stat.S_ISDIR(mode):
            if not os.path.isfile(f"{dotgit}/HEAD") or os.path.lexists(f"{dotgit}/commondir"):
                return None
            return RepoInfo(path, dotgit, path)
        if not stat.S_ISREG(mode):
            return None
        return _linked_worktree_info(path, dotgit)


def _linked_worktree_info(toplevel: str, dotgit: str) -> RepoInfo | None:
    try:
        with open(dotgit, encoding="utf-8") as handle:
            text = handle.read(4096).strip()
        if not text.startswith("gitdir: "):
            return None
        admin = os.path.realpath(os.path.join(toplevel, text[len("gitdir: "):]))
        with open(f"{admin}/commondir", encoding="utf-8") as handle:
            common = os.path.realpath(os.path.join(admin, handle.read(4096).strip()))
    except OSError:
        return None
    if os.path.dirname(admin) != f"{common}/worktrees" or os.path.basename(common) != ".git":
        return None  # a submodule, a bare repository's worktree, a separate git dir: ask git
    return RepoInfo(os.path.dirname(common), common, toplevel)
