"""A checkout's index and files: status, snapshots' staging, moving a checkout from one
commit to another (and finishing a move a killed vwt left half done), rebases left for
the user.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress

from ..errors import says_disk_full
from ..light import NamedTuple
from ..processes import Finished
from .refs import GITLINK, blob_contents, changed_paths, rev_parse, tree_entries
from .runner import Git, first_line, repo_filter_drivers


class Status(NamedTuple):
    """What `git status --porcelain=v2` says about one working tree."""

    head: str | None
    branch: str | None  # None when detached
    changes: int
    untracked: int
    nested_repos: tuple[str, ...]  # untracked folders that hold a repository of their own
    dirty_submodules: tuple[str, ...]
    paths: tuple[str, ...] = ()  # every path an entry names (both sides of a rename)
    # (commits of the upstream not in HEAD, commits of HEAD not in the upstream), when asked
    ahead_behind: tuple[int, int] | None = None


def status(git: Git, upstream: tuple[str, str] | None = None,
           private_index: str | None = None) -> Status:
    """One call: changed and untracked entries, HEAD and branch. With `upstream`
    (branch, local ref), the same process also counts commits between that branch and the
    ref, as `left_right_counts(ref, HEAD)` would, by naming the ref the branch's upstream
    for this command only (`-c`; the repository's config is not touched).

    `private_index`: a copy of the worktree's index (made with its mtime) to read instead,
    which git may refresh and write: the files it had to re-hash (racily clean entries)
    are then known to a later `snapshot_tree` of the same copy, which does not hash them
    again. Without it git never writes the worktree's own index (no optional locks)."""
    config: list[str] = []
    if upstream is not None and "=" not in upstream[0]:
        config = ["-c", f"branch.{upstream[0]}.remote=.",
                  "-c", f"branch.{upstream[0]}.merge={upstream[1]}"]
    out = git.out(
        *config, "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all",
        *(["--ahead-behind"] if config else []),
        env={"GIT_INDEX_FILE": private_index} if private_index else {"GIT_OPTIONAL_LOCKS": "0"},
    )
    ahead_behind: tuple[int, int] | None = None
    head: str | None = None
    branch: str | None = None
    changes = untracked = 0
    nested: list[str] = []
    submodules: list[str] = []
    paths: list[str] = []
    fields = iter(out.split("\0"))
    for entry in fields:
        if not entry:
            continue
        kind = entry[0]
        if entry.startswith("# branch.oid "):
            oid = entry[len("# branch.oid "):]
            head = None if oid == "(initial)" else oid
        elif entry.startswith("# branch.head "):
            name = entry[len("# branch.head "):]
            branch = None if name == "(detached)" else name
        elif entry.startswith("# branch.ab ") and config:
            ahead_behind = _ahead_behind(entry[len("# branch.ab "):])
        elif kind == "?":
            changes += 1
            untracked += 1
            paths.append(entry[2:])
            if entry.endswith("/"):
                nested.append(entry[2:])
        elif kind in "12u":
            changes += 1
            parts = entry.split(" ", 8)
            sub = parts[2] if len(parts) > 2 else "N..."
            if sub.startswith("S") and (sub[2] == "M" or sub[3] == "U"):
                submodules.append(parts[-1])
            paths.append(entry.split(" ", _STATUS_FIELDS[kind])[-1])
            if kind == "2":
                paths.append(next(fields, ""))  # the rename's original path
    if upstream is None or branch != upstream[0]:
        ahead_behind = None
    return Status(head, branch, changes, untracked, tuple(nested), tuple(submodules),
                  tuple(paths), ahead_behind)


def _ahead_behind(text: str) -> tuple[int, int] | None:
    """`+A -B` of `# branch.ab` as (B, A); None when git could not count (`+? -?`)."""
    ahead, _, behind = text.partition(" ")
    if ahead[:1] == "+" and behind[:1] == "-" and ahead[1:].isdigit() and behind[1:].isdigit():
        return int(behind[1:]), int(ahead[1:])
    return None


_STATUS_FIELDS = {"1": 8, "2": 9, "u": 10}  # spaces before the path, per entry kind


def changed_files(git: Git) -> list[tuple[str, str]]:
    """(XY status, path) of every `git status` entry, untracked included; a rename's
    path reads `old -> new`."""
    out = git.out("status", "--porcelain=v1", "-z", "--untracked-files=all",
                  env={"GIT_OPTIONAL_LOCKS": "0"})
    found = []
    fields = iter(out.split("\0"))
    for entry in fields:
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":
            path = f"{next(fields, '?')} -> {path}"
        found.append((code, path))
    return found


def untracked_files(git: Git) -> list[str]:
    out = git.out("ls-files", "-z", "--others", "--exclude-standard",
                  env={"GIT_OPTIONAL_LOCKS": "0"})
    return [path for path in out.split("\0") if path]


def diff_against(git: Git, base: str, index_file: str | None = None) -> str:
    """The working tree against `base` as a patch; never an external diff or textconv.
    `index_file`: an index to read paths from (untracked files added intent-to-add)."""
    env = {"GIT_OPTIONAL_LOCKS": "0", **({"GIT_INDEX_FILE": index_file} if index_file else {})}
    return git.out("diff", "--no-ext-diff", "--no-textconv", "--no-color", "-M", base, "--",
                   env=env)


def intend_to_add(git: Git, index_file: str, paths: Sequence[str]) -> None:
    """Record `paths` as intent-to-add in `index_file` (no file content is read or stored)."""
    git.run("add", "--intent-to-add", "--pathspec-from-file=-", "--pathspec-file-nul",
            input="".join(f"{p}\0" for p in paths),
            env={"GIT_INDEX_FILE": index_file, "GIT_OPTIONAL_LOCKS": "0"})


def files_using_filters(git: Git, drivers: Iterable[str],
                        paths: Sequence[str] | None = None) -> list[str]:
    """Tracked or untracked-not-ignored files (or just `paths`) whose `filter` attribute
    names one of `drivers`."""
    wanted = set(drivers)
    if not wanted:
        return []
    if paths is None:
        files = git.out("ls-files", "-z", "--cached", "--others", "--exclude-standard")
    else:
        files = "".join(f"{path}\0" for path in paths)
    if not files:
        return []
    out = git.out("check-attr", "-z", "--stdin", "filter", input=files)
    fields = out.split("\0")
    return sorted(
        {path for path, _attr, value in zip(fields[0::3], fields[1::3], fields[2::3],
                                             strict=False) if value in wanted}
    )


def snapshot_tree(git: Git, index_file: str) -> str:
    """Stage everything (untracked in, ignored out) into `index_file`; return the tree id."""
    env = {"GIT_INDEX_FILE": index_file}
    git.run("add", "--all", env=env)
    return git.out("write-tree", env=env).strip()


def changed_files_using_filters(git: Git, old: str, new: str, drivers: Iterable[str]
                                ) -> list[str]:
    """Files that differ between `old` and `new` whose `filter` attribute names one of
    `drivers` (checking them out would need the driver)."""
    wanted = set(drivers)
    if not wanted:
        return []
    paths = git.out("diff", "--name-only", "-z", "--no-renames", old, new)
    if not paths:
        return []
    out = git.out("check-attr", "-z", "--stdin", "filter", input=paths)
    fields = out.split("\0")
    return sorted({path for path, _attr, value in zip(fields[0::3], fields[1::3], fields[2::3],
                                                       strict=False) if value in wanted})


def move_checkout_check(git: Git, old: str, new: str) -> str | None:
    """Why moving this checkout from `old` to `new` (as `git merge --ff-only` would) would
    overwrite local changes, untracked files in the way included; None when it would not.
    Asked of a private copy of its index: nothing of the checkout is written or locked."""
    from ..index_files import private_copy  # only moves need the index files


    copy = private_copy(index_path(git))
    try:
        env = {"GIT_INDEX_FILE": copy}
        git.run("update-index", "-q", "--refresh", env=env, check=False)
        return _checkout_problem(git, git.run("read-tree", "-m", "-u", "-n", old, new, env=env,
                                              check=False))
    finally:
        for leftover in (copy, f"{copy}.lock"):
            with suppress(FileNotFoundError):
                os.unlink(leftover)


def move_checkout(git: Git, old: str, new: str) -> str | None:
    """Two-tree merge of index and files from `old` to `new`, keeping unrelated local
    changes; the error line, or None (see `checkout_move`)."""
    from ..index_files import IndexBusy  # only moves need the index files


    try:
        with checkout_move(git, old, new) as move:
            problem = move.run()
            if problem:
                raise NotMoved(problem)
    except IndexBusy as busy:
        return f"another git process holds {busy}"
    except NotMoved as stop:
        return stop.problem
    return None


class InTheWay(NamedTuple):
    """A checkout's local changes that moving it to another commit would overwrite."""

    changed: tuple[str, ...]  # tracked files changed there, staged or not
    untracked: tuple[str, ...]


def in_the_way(git: Git, old: str, new: str) -> InTheWay:
    """What stops moving this checkout from `old` to `new` (`move_checkout_check`'s
    reason, by path): the files it changed that the move changes, and its untracked files
    where the move writes a file, or a folder of one (or a file where they are a folder)."""
    moving = set(changed_paths(git, old, new))
    moving_folders = {path[:i] for path in moving for i, c in enumerate(path) if c == "/"}
    out = git.out("status", "--porcelain", "-z", "--untracked-files=all", "--no-renames",
                  env={"GIT_OPTIONAL_LOCKS": "0"})
    changed: list[str] = []
    untracked: list[str] = []
    for entry in filter(None, out.split("\0")):
        path = entry[3:]
        folders = (path[:i] for i, c in enumerate(path) if c == "/")
        if path in moving or path in moving_folders or any(f in moving for f in folders):
            (untracked if entry.startswith("??") else changed).append(path)
    return InTheWay(tuple(sorted(changed)), tuple(sorted(untracked)))


class CheckoutMove(NamedTuple):
    git: Git
    old: str
    new: str
    index_copy: str

    def run(self) -> str | None:
        """Move the files, and the private copy of the index, from `old` to `new`; git's
        reason when it cannot (local changes in the way), or None."""
        env = {"GIT_INDEX_FILE": self.index_copy}
        self.git.run("update-index", "-q", "--refresh", env=env, check=False)
        return _checkout_problem(self.git, self.git.run("read-tree", "-m", "-u", self.old,
                                                        self.new, env=env, check=False))


@contextmanager
def checkout_move(git: Git, old: str, new: str) -> Iterator[CheckoutMove]:
    """Hold git's lock on the checkout's index for a move from `old` to `new`, from before
    its branch moves until its files have: git writes a private copy of the index, which
    replaces the index when the block ends without an exception. A kill leaves a lock that
    the next `vwt merge`, `vwt sync` or `vwt prune` recognises as a dead vwt's and whose move it
    finishes (`repair_repo`). IndexBusy: another git holds the lock."""
    from ..index_files import MOVE, locked_index  # only moves need the index files


    with locked_index(index_path(git), f"{MOVE} {old} {new}") as copy:
        yield CheckoutMove(git, old, new, copy)


class NotMoved(Exception):
    """A checkout move stopped before its index was replaced; `problem` says why."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def index_path(git: Git) -> str:
    """The absolute path of the index of the checkout `git` runs in."""
    path = git.out("rev-parse", "--path-format=absolute", "--git-path", "index").strip()
    return path


def index_matches(git: Git, tree: str) -> bool:
    """The checkout's index holds exactly `tree` (stat data aside)."""
    return git.run("diff-index", "--cached", "--quiet", tree, "--", check=False,
                   env={"GIT_OPTIONAL_LOCKS": "0"}).returncode == 0


def _checkout_problem(git: Git, result: Finished) -> str | None:
    """git's reason a checkout cannot move, or None; a full disk is not such a reason, but
    an error of its own (the checkout has no local changes in the way)."""
    if result.returncode == 0:
        return None
    if says_disk_full(result.stderr):
        raise git.failure(["read-tree"], result.stderr)
    return first_line(result.stderr)


def reset_keep(git: Git, commit: str) -> None:
    git.run("reset", "-q", "--keep", commit)


# Nothing of the user's rebase settings that would touch more than the worktree's branch,
# and no editor: vwt is not interactive.
_REBASE_CONFIG = (("rebase.autoStash", "false"), ("rebase.updateRefs", "false"),
                  ("rebase.autoSquash", "false"))


_NO_EDITOR = {"GIT_EDITOR": "true", "GIT_SEQUENCE_EDITOR": "true"}


def _rebasing(git: Git) -> Git:
    return git._replace(extra_config=(*git.extra_config, *_REBASE_CONFIG))


def rebase_onto(git: Git, onto: str, upstream: str) -> Finished:
    """`git rebase --onto ONTO UPSTREAM` of the checked-out branch; stops at a conflict
    (exit status not 0, the rebase left in progress)."""
    return _rebasing(git).run("rebase", "--merge", "--no-autostash", "--onto", onto, upstream,
                              env=_NO_EDITOR, check=False)


def rebase_continue(git: Git) -> Finished:
    return _rebasing(git).run("rebase", "--continue", env=_NO_EDITOR, check=False)


def rebase_abort(git: Git) -> None:
    _rebasing(git).run("rebase", "--abort", env=_NO_EDITOR)


def unmerged_paths(git: Git) -> list[str]:
    """The repository's paths with unresolved conflicts in the index. In a file/folder
    conflict git leaves the file as `<path>~<label>` (`df~HEAD`, `df~1a2b3c4 (subject)`)
    beside the folder `<path>/`, and lists that stand-in name: the path is `<path>`."""
    env = {"GIT_OPTIONAL_LOCKS": "0"}
    out = git.out("diff", "--name-only", "-z", "--diff-filter=U", env=env)
    paths = [path for path in out.split("\0") if path]
    if any("~" in path for path in paths):
        indexed = git.out("ls-files", "-z", env=env).split("\0")
        folders = {path[:i] for path in indexed for i, c in enumerate(path) if c == "/"}
        paths = [_clashing_path(path, folders) for path in paths]
    return sorted(dict.fromkeys(paths))


def _clashing_path(path: str, folders: set[str]) -> str:
    """`<path>` of a stand-in `<path>~<label>` whose `<path>` is a folder in the index (git
    puts no `/` in the label); `path` itself when it is no such stand-in."""
    start = path.rfind("/") + 1
    for i in range(start, len(path)):
        if path[i] == "~" and path[:i] in folders:
            return path[:i]
    return path


def add_all_and_commit(git: Git, message: str) -> None:
    """Commit everything (untracked included, ignored excluded) with the user's identity."""
    git.run("add", "--all")
    git.run("commit", "-q", "--no-verify", "-F", "-", input=message)


def undo_checkout_move(git: Git, old: str, new: str) -> list[str]:
    """Put a checkout back at `old` after moving it to `new` failed part-way (a full disk
    stopped `read-tree -m -u` or `reset --keep`): its index and HEAD still say `old`, but
    some files may hold `new`'s version, whole or cut short. Each such file is put back as
    `old` has it (or removed, when `old` has none); a file holding anything else is left
    alone. Returns the paths left alone."""
    paths = changed_paths(git, old, new)
    if not paths:
        return []
    before, after = tree_entries(git, old), tree_entries(git, new)
    contents = blob_contents(git, [after[p][1] for p in paths
                                   if p in after and after[p][0] != GITLINK])
    back, left = [], []
    for path in paths:
        current = _file_bytes(os.path.join(git.cwd, path))
        wanted = after.get(path)
        written_by_the_move = current is None or (
            isinstance(current, bytes) and wanted is not None and wanted[0] != GITLINK
            and contents[wanted[1]].startswith(current))
        if not written_by_the_move:
            left.append(path)
        elif path in before:
            back.append(path)
        elif current is not None:
            os.unlink(os.path.join(git.cwd, path))
            _remove_empty_parents(git.cwd, path)
    if back:
        git.run("checkout-index", "-f", "-z", "--stdin", input="".join(f"{p}\0" for p in back))
    return left


def _file_bytes(path: str) -> bytes | bool | None:
    """A file's bytes (a symlink's target), None when nothing is there, False for anything
    else (a folder)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return False
    if stat.S_ISLNK(mode):
        return os.fsencode(os.readlink(path))
    if not stat.S_ISREG(mode):
        return False
    with open(path, "rb") as handle:
        return handle.read()


def _remove_empty_parents(top: str, path: str) -> None:
    folder = os.path.dirname(path)
    while folder:
        try:
            os.rmdir(os.path.join(top, folder))
        except OSError:
            return
        folder = os.path.dirname(folder)


# -- what a killed vwt left: finishing its checkout move --------------------------------------

def repair_repo(common_dir: str) -> list[str]:
    """Release the locks killed vwt processes left in the repository and finish the checkout
    moves they interrupted (the branch had moved, the files and index not all): each file
    the move had written is put back, then the checkout is moved again. Returns what was
    done, one line each, for a warnin"""
    from ..index_files import MOVE, release_dead_locks_of_repo  # only moves need the index files

    done = []
    for git_dir, note in release_dead_locks_of_repo(common_dir):
        where = _work_tree_of(common_dir, git_dir)
        parts = note.split()
        done.append(f"removed the index.lock a killed vwt left in {where or git_dir}")
        if where and len(parts) == 3 and parts[0] == MOVE:
            done += _release_ref_locks(common_dir, git_dir, parts[1], parts[2])
            done.append(_finish_move(where, parts[1], parts[2]))
    return done


def _release_ref_locks(common_dir: str, git_dir: str, old: str, new: str) -> list[str]:
    """The move's compare-and-swap of the branch checked out there (from `old` to `new`)
    may have been killed holding the branch's lock (and HEAD's): the vwt that ran it is
    dead, so a lock holding nothing, `old` or `new` goes."""
    from ..ref_locks import release_dead_ref_locks

    try:
        with open(os.path.join(git_dir, "HEAD"), encoding="utf-8", errors="replace") as handle:
            head = handle.read(4096).strip()
    except OSError:
        return []
    if not head.startswith("ref: refs/heads/"):
        return []
    branch = head[len("ref: refs/heads/"):]
    return [f"removed the {os.path.basename(path)} a killed vwt left in {path}"
            for path in release_dead_ref_locks(common_dir, git_dir, branch, (old, new))]


def _work_tree_of(common_dir: str, git_dir: str) -> str | None:
    if git_dir == common_dir:
        return os.path.dirname(common_dir) if os.path.basename(common_dir) == ".git" else None
    try:
        with open(os.path.join(git_dir, "gitdir"), encoding="utf-8") as handle:
            return os.path.dirname(handle.read().strip())
    except OSError:
        return None


def _finish_move(where: str, old: str, new: str) -> str:
    drivers, _per_worktree = repo_filter_drivers(Git(where))
    git = Git(where, neutralised_filters=drivers)
    head = rev_parse(git, "HEAD")
    if head == old and index_matches(git, old):
        return f"{where} was not moved (its branch had not moved yet)"
    if head == new and index_matches(git, new):
        return f"{where} had finished moving to {new[:12]}"
    if head != new or not index_matches(git, old):
        return f"{where} was changed since; left as it is"
    left = undo_checkout_move(git, old, new)
    problem = move_checkout(git, old, new)
    if problem:
        return (f"could not finish moving {where} to {new[:12]} ({problem}; "
                f"{', '.join(left[:3])}); check it with git status")
    return f"finished moving {where} to {new[:12]}"
