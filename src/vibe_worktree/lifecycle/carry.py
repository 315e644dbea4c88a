"""Carried changes: `vwt new NAME --carry` and `--move` (the current checkout's uncommitted
work goes into the new worktree; with `--move` it then leaves the source).

The work is captured once, as two trees in the object store (the index, and everything
a snapshot would stage), without writing the source's index or files. The order of the
steps is what keeps it safe: the new worktree holds the work, then `--move` saves it to
`refs/vibe/carried/<name>`, and only then are exactly those changes taken out of the
source, each file only while it is still as it was captured.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import suppress

from ..core import git as g
from ..core.errors import DiskFull, GitFailed, ValidationFailed, VwtError, disk_is_full
from ..core.faults import checkpoint
from ..core.files import SpareRoom, copy_index
from ..core.layout import rmdir_if_empty, unlink_if_exists
from ..core.light import NamedTuple
from .worktrees import Checkout, Inspection, housekeeping_git

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    Warn = Callable[[str], None]

CARRIED_PREFIX = "refs/vibe/carried/"
_LITERAL = {"GIT_LITERAL_PATHSPECS": "1", "GIT_OPTIONAL_LOCKS": "0"}


class Carried(NamedTuple):
    """What `new --carry`/`--move` did with the source's uncommitted work."""

    files: tuple[str, ...]  # every path carried (relative to the top level)
    moved: bool
    ref: str | None  # refs/vibe/carried/<name> after a move
    left_in_source: tuple[str, ...] = ()  # changed again after the capture: not removed

    def to_json(self) -> dict[str, object]:
        return {"files": list(self.files), "moved": self.moved, "ref": self.ref,
                "left_in_source": list(self.left_in_source)}


class Made(NamedTuple):
    """The worktree the work is carried into, as `new` made (or reused) it."""

    name: str
    path: str
    created: bool  # False: it existed already (a killed run had made it)


class Source(NamedTuple):
    """The checkout whose work is carried."""

    checkout: Checkout
    git: g.Git  # housekeeping: no hook, fsmonitor or filter of the repository runs


class Captured(NamedTuple):
    source: Source
    head: str
    index_tree: str  # the source's index
    work_tree: str  # its files: staged, unstaged, deletions, untracked; never ignored
    files: tuple[str, ...]  # paths where the index or the files differ from HEAD
    added: frozenset[str]  # of those, the ones HEAD does not have


class Plan(NamedTuple):
    """The captured work and the trees it becomes on the new branch's start point."""

    captured: Captured
    start: str
    index_tree: str
    work_tree: str

    def fill(self, checkout: str) -> None:
        """Put the carried work into the fresh checkout at `start`, as uncommitted changes
        (staged what was staged); nothing is ever written outside `checkout`."""
        git = self.captured.source.git._replace(cwd=checkout)
        git.run("read-tree", "--reset", "-u", self.work_tree)
        git.run("read-tree", "-m", self.index_tree)  # keeps the stat data of equal entries
        checkpoint("carry.filled")



class Filling:
    """How the new checkout is filled, and what is undone when its creation fails.

    With `move`, the work is also saved to `refs/vibe/carried/<name>` while the new worktree
    is still being made, so that a failure there (a full disk) undoes the creation and the
    same command run again starts afresh; `undo` drops that ref again (the work is still
    all in the source). Room for taking the work out of the source afterwards (HEAD's
    versions and a new index) is taken on its disk before anything is created, so a full
    disk stops the move before it starts, never half way through the take-out."""

    def __init__(self, chosen: Plan, move: bool) -> None:
        self.chosen = chosen
        self.move = move
        self.saved: list[str] = []
        self.room: SpareRoom | None = None
        if move and chosen.captured.files:
            try:
                self.room = SpareRoom(chosen.captured.source.checkout.admin_dir,
                                      _take_out_room(chosen.captured))
            except OSError as exc:
                if disk_is_full(exc):
                    raise DiskFull(f"making room to move the work of "
                                   f"{chosen.captured.source.checkout.path}") from None
                raise

    def fill(self, checkout: str) -> None:
        self.chosen.fill(checkout)
        if self.move and self.chosen.captured.files:
            self.saved.append(save(self.chosen.captured, os.path.basename(checkout)))

    def undo(self) -> None:
        git = self.chosen.captured.source.git
        for ref in self.saved:
            commit = g.rev_parse(git, ref)
            if commit is not None:
                g.delete_ref(git, ref, commit)
        self.give_room_back()

    def give_room_back(self) -> None:
        if self.room is not None:
            self.room.give_back()


def _take_out_room(captured: Captured) -> int:
    """Bytes the take-out may write: a new index, and about each carried file again (a
    block at least), plus a little for git's lock files."""
    top, room = captured.source.checkout.path, 1 << 16
    with suppress(OSError):
        room += os.stat(os.path.join(captured.source.checkout.admin_dir, "index")).st_size
    for path in captured.files:
        with suppress(OSError):
            room += (os.lstat(os.path.join(top, path)).st_size // 4096 + 1) * 4096
    return room


def open_source(cwd: str) -> Source:
    git = g.Git(cwd)
    result = git.run("rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir",
                     check=False)
    lines = result.stdout.splitlines()
    if result.returncode != 0 or len(lines) != 3:
        raise VwtError("--carry and --move take the work of the checkout you are in; run them "
                       "inside a git checkout")
    top, admin, common = lines[0], lines[1], os.path.join(cwd, lines[2])
    checkout = Checkout(top, admin, os.path.realpath(common), None)
    return Source(checkout, housekeeping_git(checkout))


def _index_tree(source: Source) -> str:
    """The tree of the source's index, written from a copy (its own index stays as is)."""
    admin = source.checkout.admin_dir
    index = os.path.join(admin, f"vwt-carry-{os.urandom(6).hex()}.index")
    try:
        copy_index(os.path.join(admin, "index"), index)
        result = source.git.run("write-tree", env={"GIT_INDEX_FILE": index}, check=False)
    finally:
        unlink_if_exists(index)
    if result.returncode != 0 and "unmerged" in result.stderr:
        raise VwtError(f"{source.checkout.path} has unresolved conflicts; resolve them (or "
                       "commit) before carrying its changes")
    if result.returncode != 0:
        raise source.git.failure(["write-tree"], result.stderr)
    return result.stdout.strip()


def _work_tree(source: Source) -> str:
    from .remove import stage_work  # the snapshot's own staging: untracked in, ignored out

    admin = source.checkout.admin_dir
    return stage_work(source.git, admin, admin)


def _differences(git: g.Git, old: str, new: str) -> dict[str, str]:
    """path -> status letter (A, D, M, T) of every file that differs between two trees."""
    if old == new:
        return {}
    out = git.out("diff-tree", "-r", "-z", "--name-status", "--no-renames", old, new)
    fields = out.split("\0")
    return {path: status[:1] for status, path in zip(fields[0::2], fields[1::2], strict=False)
            if path}


def capture(source: Source) -> Captured:
    """The source's uncommitted work as trees; refuses what a snapshot could not save."""
    from .remove import work_problem

    st = g.status(source.git)
    if st.head is None:
        raise VwtError(f"{source.checkout.path} has no commit yet; commit something first")
    inspection = Inspection(st.changes, st.untracked, 0, st.head, st.branch, st.nested_repos,
                            st.dirty_submodules)
    problem = work_problem(source.checkout.path, source.checkout, inspection)
    if problem:
        raise ValidationFailed(f"cannot carry the changes: {problem}")
    # two independent reads, side by side; neither writes the source's index or files
    index_tree, work_tree = g.map_parallel(lambda read: read(source), [_index_tree, _work_tree])
    head_tree = g.tree_of(source.git, st.head)
    staged = _differences(source.git, head_tree, index_tree)
    files = _differences(source.git, head_tree, work_tree)
    added = {p for p, s in staged.items() if s == "A"} | {p for p, s in files.items() if s == "A"}
    return Captured(source, st.head, index_tree, work_tree, tuple(sorted({*staged, *files})),
                    frozenset(added))


def plan(captured: Captured, start: str | None, label: str | None) -> Plan:
    """The trees on `start` (default: the source's HEAD); the carried changes must apply to
    it cleanly (a three-way merge), else VwtError and nothing is created."""
    if start is None or start == captured.head:
        return Plan(captured, captured.head, captured.index_tree, captured.work_tree)
    return Plan(captured, start, _apply_onto(captured, captured.index_tree, start, label),
                _apply_onto(captured, captured.work_tree, start, label))


def _apply_onto(captured: Captured, tree: str, start: str, label: str | None) -> str:
    """`tree`'s changes against HEAD, applied to `start` in a throw-away index."""
    git = captured.source.git
    head_tree = g.tree_of(git, captured.head)
    if tree == head_tree:
        return g.tree_of(git, start)
    index = os.path.join(captured.source.checkout.admin_dir,
                         f"vwt-carry-{os.urandom(6).hex()}.index")
    env = {"GIT_INDEX_FILE": index}
    try:
        git.run("read-tree", start, env=env)
        patch = git.out("diff-tree", "-r", "-p", "--binary", "--full-index", "--no-renames",
                        "--no-ext-diff", "--no-textconv", "--no-color", head_tree, tree)
        applied = git.run("apply", "--cached", "--3way", "--whitespace=nowarn", input=patch,
                          env=env, check=False)
        if applied.returncode != 0:
            raise VwtError(f"the carried changes do not apply cleanly to {label or start} "
                           f"({_conflict(applied.stderr)}); nothing created")
        return git.out("write-tree", env=env).strip()
    finally:
        unlink_if_exists(index)


def _conflict(stderr: str) -> str:
    for line in stderr.splitlines():
        if line.startswith("U "):
            return f"conflict in {line[2:]}"
    return g.first_line(stderr)


def prepare(cwd: str, name: str | None, branch: str | None, from_ref: str | None,
            made_before: bool = False) -> Plan:
    """Everything checked before the reservation: the work, the branch, the start point.
    `made_before`: NAME is already a worktree on that branch (a run killed after making
    it); `finish` then carries on only if it holds exactly this work."""
    source = open_source(cwd)
    wanted = branch or name
    if wanted and not made_before and g.branch_tip(source.git, wanted) is not None:
        raise VwtError(f"branch {wanted} already exists; --carry and --move start a new branch "
                       "(pick another NAME or -b BRANCH)")
    start = None
    if from_ref is not None:
        start = g.commit_of(source.git, from_ref)
        if start is None:
            raise GitFailed(f"--from {from_ref} names no commit")
    result = plan(capture(source), start, from_ref)
    checkpoint("carry.captured")
    return result


def finish(chosen: Plan, made: Made, move: bool, warn: Warn,
           filling: Filling | None = None) -> Carried:
    """After the new worktree `made` holds the work: with `move`, take it out of the
    source (in the room `filling` kept for it). What was carried."""
    captured = chosen.captured
    resumed = _saved_by_a_killed_run(chosen, made) if move else None
    if resumed is not None:  # its take-out may have been cut short: finish it from the ref
        _settle_cut_short_take_out(resumed)
        captured = resumed
    elif not made.created and captured.files:  # a killed run made it: finish it
        if not _holds(made.path, chosen.work_tree):
            if not _holds_part_of_it(chosen, made.path):
                raise VwtError(f"{made.name} exists already and does not hold this work; "
                               "nothing carried (the source is untouched)")
            chosen.fill(made.path)  # the fill the killed run never did, or did in part
        if move:
            save(captured, made.name)
    if not captured.files:
        warn(f"nothing to carry: {captured.source.checkout.path} has no uncommitted changes")
        return Carried((), move, None)
    if not move:
        return Carried(captured.files, False, None)
    ref = f"{CARRIED_PREFIX}{made.name}"  # saved by `Filling.fill`
    checkpoint("move.saved")
    if filling is not None:
        filling.give_room_back()
    left = take_out(captured)
    if left:
        warn(f"left {len(left)} file(s) in {captured.source.checkout.path} that changed after "
             f"they were carried: {', '.join(left[:5])}{' ...' if len(left) > 5 else ''} "
             f"(the carried version is in {ref})")
    return Carried(captured.files, True, ref, tuple(left))


def _saved_by_a_killed_run(chosen: Plan, made: Made) -> Captured | None:
    """What a `--move` killed after saving `refs/vibe/carried/NAME` had captured, when the
    worktree it made (reused now) holds exactly that work; None otherwise. Its take-out may
    have put part of the work back as HEAD has it, so the source alone no longer says what
    was carried: the saved commit does (its tree, and its second parent's: the index)."""
    if made.created:
        return None
    source = chosen.captured.source
    git = source.git
    saved = g.commit_of(git, f"{CARRIED_PREFIX}{made.name}")
    head = g.commit_of(git, f"{saved}^1") if saved else None
    index = g.commit_of(git, f"{saved}^2") if saved else None
    if saved is None or head is None or index is None:
        return None
    work_tree, index_tree = g.tree_of(git, saved), g.tree_of(git, index)
    head_tree = g.tree_of(git, head)
    staged = _differences(git, head_tree, index_tree)
    files = _differences(git, head_tree, work_tree)
    added = {p for p, s in staged.items() if s == "A"} | {p for p, s in files.items() if s == "A"}
    captured = Captured(source, head, index_tree, work_tree, tuple(sorted({*staged, *files})),
                        frozenset(added))
    try:
        wanted = plan(captured, chosen.start, None).work_tree
    except VwtError:
        return None
    return captured if _holds(made.path, wanted) else None


def _holds_part_of_it(chosen: Plan, checkout: str) -> bool:
    """The checkout is at the start point and holds nothing but some of the work: every
    path that differs from the start holds exactly what the work has there (a run killed
    before or while it filled the checkout, which a prune then adopted). Filling it again
    then writes only the work over the work."""
    try:
        found = open_source(checkout)
        if g.rev_parse(found.git, "HEAD") != chosen.start:
            return False
        now = _work_tree(found)
    except VwtError:
        return False
    git = found.git
    touched = set(_differences(git, g.tree_of(git, chosen.start), now))
    return not touched & set(_differences(git, now, chosen.work_tree))


def _settle_cut_short_take_out(captured: Captured) -> None:
    """What a take-out killed part-way left in the source, settled before it goes on. It
    renames each file aside (`.<name>.vwt-<hex>`), drops it if it is the carried version,
    then writes HEAD's version through another such name. An aside holding the carried
    version goes (it is in the ref and in the worktree); one holding HEAD's goes to its path
    when that is free, else goes too (HEAD has it); any other goes back to its path when
    that is free, else stays. A carried file then missing where HEAD has one was dropped
    before HEAD's version was written: HEAD's version is written."""
    import re

    git = captured.source.git
    top = captured.source.checkout.path
    carried, head = g.tree_entries(git, captured.work_tree), g.tree_entries(git, captured.head)
    by_folder: dict[str, list[str]] = {}
    for path in captured.files:
        by_folder.setdefault(os.path.dirname(path), []).append(os.path.basename(path))
    for folder, names in by_folder.items():
        try:
            present = os.listdir(os.path.join(top, folder))
        except OSError:
            present = []
        for name in names:
            aside = re.compile(rf"\.{re.escape(name)}\.vwt-[0-9a-f]{{8}}")
            path = os.path.join(folder, name)
            for found in filter(aside.fullmatch, present):
                _settle_aside(top, path, os.path.join(top, folder, found), carried.get(path),
                              head.get(path))
    missing = [p for p in captured.files if p in carried and p in head
               and head[p][0] != g.GITLINK and not os.path.lexists(os.path.join(top, p))]
    contents = g.blob_contents(git, [head[p][1] for p in missing])
    for path in missing:
        _put_in_place(top, path, head[path][0], contents[head[path][1]])


def _settle_aside(top: str, path: str, aside: str, carried: tuple[str, str] | None,
                  head: tuple[str, str] | None) -> None:
    full = os.path.join(top, path)
    if carried is not None and _same_as(aside, *carried):
        os.unlink(aside)
        _remove_empty_folders(top, os.path.dirname(aside))
    elif head is not None and head[0] != g.GITLINK and _same_as(aside, *head):
        _place_back(aside, full)
        unlink_if_exists(aside)  # still there: the path is taken, and HEAD has this version
    else:
        _place_back(aside, full)


def _holds(checkout: str, work_tree: str) -> bool:
    """The checkout's full state (as a snapshot stages it) is exactly `work_tree`."""
    try:
        return _work_tree(open_source(checkout)) == work_tree
    except VwtError:
        return False


def save(captured: Captured, name: str) -> str:
    """`refs/vibe/carried/<name>`: the carried files as a commit on HEAD (as a snapshot is),
    with the carried index as its second parent."""
    git = captured.source.git
    index = g.commit_tree(git, captured.index_tree, [captured.head],
                          f"vibe-worktree: index carried into {name}")
    commit = g.commit_tree(git, captured.work_tree, [captured.head, index],
                           f"vibe-worktree: changes carried into {name}")
    ref = f"{CARRIED_PREFIX}{name}"
    g.set_ref(git, ref, commit)
    return ref


def take_out(captured: Captured) -> list[str]:
    """Put each carried path of the source back as HEAD has it, unless it changed since the
    capture (index or file); returns the paths left alone."""
    source = captured.source
    if g.rev_parse(source.git, "HEAD") != captured.head:  # committed meanwhile: hands off
        return list(captured.files)
    index_now, work_now = g.map_parallel(lambda read: read(source), [_index_tree, _work_tree])
    head_tree = g.tree_of(source.git, captured.head)

    def moved(carried: str, now: str) -> set[str]:  # neither as carried nor as HEAD has it
        return (set(_differences(source.git, carried, now))
                & set(_differences(source.git, head_tree, now)))

    changed = moved(captured.index_tree, index_now) | moved(captured.work_tree, work_now)
    left = [p for p in captured.files if p in changed]
    revert = [p for p in captured.files if p not in changed]
    if revert:
        left += _revert(captured, revert)
    return sorted(left)


def _revert(captured: Captured, paths: Sequence[str]) -> list[str]:
    """Put `paths` back as HEAD has them, file by file, never over a change made since the
    re-check: each file is first renamed aside (one atomic step), and only a file that is
    still exactly what was carried is dropped; anything else goes back where it was. HEAD's
    version is then put in place only where the path is still free. Returns the paths left
    alone after all."""
    git = captured.source.git
    top = captured.source.checkout.path
    carried = g.tree_entries(git, captured.work_tree)
    head = g.tree_entries(git, captured.head)
    contents = g.blob_contents(git, [head[p][1] for p in paths if p in head
                                    and head[p][0] != g.GITLINK])
    left: list[str] = []
    done: list[str] = []
    # files HEAD lacks first: a folder that replaced a file must go before the file is back
    for path in sorted(paths, key=lambda p: (p not in captured.added, p)):
        if _as_head_has_it(top, path, head.get(path)):  # taken out already (a killed run)
            done.append(path)
            continue
        if _not_a_folder_on_the_way(top, path) or not _take_aside(top, path, carried.get(path)):
            left.append(path)
            continue
        wanted = head.get(path)
        if wanted is not None and wanted[0] != g.GITLINK and not _put_in_place(
                top, path, wanted[0], contents[wanted[1]]):
            left.append(path)  # a file appeared there meanwhile: it stays
            continue
        done.append(path)
    checkpoint("move.removed")
    if done:
        git.run("reset", "-q", captured.head, "--pathspec-from-file=-", "--pathspec-file-nul",
                input="".join(f"{p}\0" for p in done), env=_LITERAL)
    checkpoint("move.unstaged")
    return left


def _as_head_has_it(top: str, path: str, wanted: tuple[str, str] | None) -> bool:
    """The source's file at `path` is HEAD's version already (absent, where HEAD has none)."""
    full = os.path.join(top, path)
    if wanted is None:
        return not os.path.lexists(full)
    if wanted[0] == g.GITLINK or not os.path.lexists(full):
        return False
    return not (os.path.isdir(full) and not os.path.islink(full)) and _same_as(full, *wanted)


def _take_aside(top: str, path: str, carried: tuple[str, str] | None) -> bool:
    """Remove the source's file at `path` if it is exactly what was carried (`carried`
    None: carried as deleted, so nothing must be there). Renamed aside first, so an editor
    saving the file meanwhile writes a new file, which is never touched; a file that turns
    out to differ is put back. False: the path is left as it is."""
    full = os.path.join(top, path)
    if not os.path.lexists(full):
        return carried is None
    if carried is None or (os.path.isdir(full) and not os.path.islink(full)):
        return False
    aside = _beside(full)
    try:
        os.rename(full, aside)
    except OSError:
        return False
    if _same_as(aside, *carried):
        os.unlink(aside)
        _remove_empty_folders(top, os.path.dirname(full))
        return True
    _place_back(aside, full)
    return False


def _remove_empty_folders(top: str, folder: str) -> None:
    """`folder` and its parents up to `top` (never `top` itself), while they are empty."""
    while folder != top and folder.startswith(top + os.sep) and rmdir_if_empty(folder):
        folder = os.path.dirname(folder)


def _beside(full: str) -> str:
    """A fresh hidden name in the same folder (a rename or link there is one atomic step)."""
    folder, name = os.path.split(full)
    return os.path.join(folder, f".{name}.vwt-{os.urandom(4).hex()}")


def _same_as(path: str, mode: str, oid: str) -> bool:
    """The file at `path` is the blob `oid` with `mode`, as git would store it unfiltered."""
    import hashlib
    import stat

    info = os.lstat(path)
    if mode == "120000":
        if not stat.S_ISLNK(info.st_mode):
            return False
        data = os.fsencode(os.readlink(path))
    else:
        if not stat.S_ISREG(info.st_mode) or bool(info.st_mode & 0o100) != (mode == "100755"):
            return False
        with open(path, "rb") as handle:
            data = handle.read()
    digest = hashlib.sha1 if len(oid) == 40 else hashlib.sha256
    return digest(b"blob %d\0" % len(data) + data).hexdigest() == oid


def _place_back(aside: str, full: str) -> None:
    """Move `aside` back to `full`, unless a new file is there now (then both are kept)."""
    try:
        os.link(aside, full, follow_symlinks=False)
    except FileExistsError:
        return  # the newer file stays at the path; ours stays beside it, hidden but safe
    except OSError:
        return
    os.unlink(aside)


def _put_in_place(top: str, path: str, mode: str, data: bytes) -> bool:
    """Write HEAD's version of `path` only where nothing is; False when something is."""
    full = os.path.join(top, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    temp = _beside(full)
    if mode == "120000":
        os.symlink(os.fsdecode(data), temp)
    else:
        perms = 0o777 if mode == "100755" else 0o666
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, perms)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    try:
        os.link(temp, full, follow_symlinks=False)
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(temp)


def _not_a_folder_on_the_way(top: str, path: str) -> bool:
    """Something on the way from `top` to `path` exists and is not a real folder (a
    symlink, a file); missing folders are fine (HEAD's version recreates them)."""
    import stat

    folder = top
    for part in path.split("/")[:-1]:
        folder = os.path.join(folder, part)
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return True
        except FileNotFoundError:
            return False
        except OSError:
            return True
    return False


__all__ = ["CARRIED_PREFIX", "Carried", "Plan", "finish", "prepare"]
