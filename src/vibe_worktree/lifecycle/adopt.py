"""`vwt adopt`: bring worktrees other tools made under management, each moved into
`<root>/<bucket>/<name>` with its files, index, stash and branch exactly as they were.

Every check that could refuse runs before anything changes; a refusal is reported with a
reason word and a sentence, and the others go on. The move itself, and what a kill in the
middle of it leaves, is `lifecycle/adoption.py`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..core import git as g
from ..core.errors import NotARepository, VwtError
from ..core.faults import checkpoint
from ..core.layout import Claim, Root, is_empty_dir
from ..core.light import NamedTuple
from ..core.locks import STARTING, Holder, acquire_holder, prune_lock
from ..core.names import candidate_names, path_segment_problem, random_slug, slugify
from ..core.proctable import processes_inside
from ..core.records import Record, utc_now
from . import leasing
from .adoption import (
    Refused,
    adoption_record,
    finish_interrupted,
    linked_checkout,
    lock_reason,
    lock_source,
    made_by_of,
    move_in,
    source_of,
)
from .create import reserve, unreserve
from .foreign import foreign_of, made_by
from .worktrees import Checkout, Here, Repo, load_entry

NOT_FOUND = "not_found"
NOT_A_WORKTREE = "not_a_worktree"
MAIN_WORKTREE = "main_worktree"
MANAGED = "managed"
LOCKED = "locked"
DETACHED_HEAD = "detached_head"
SUBMODULES = "submodules"
IN_USE = "in_use"
OTHER_FILESYSTEM = "other_filesystem"


class Adopted(NamedTuple):
    path: str  # where it is now
    name: str
    source: str  # where it was (`from` in the JSON)
    branch: str
    made_by: str
    bucket: str

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "name": self.name, "from": self.source,
                "branch": self.branch, "made_by": self.made_by, "bucket": self.bucket}


class RefusedPath(NamedTuple):
    path: str
    reason: str  # one word: not_found, locked, in_use, ... (docs/agents.md)
    message: str  # what is wrong and what to do

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "reason": self.reason, "message": self.message}


class AdoptResult(NamedTuple):
    adopted: list[Adopted]
    refused: list[RefusedPath]

    @property
    def exit_code(self) -> int:
        return 1 if self.refused else 0

    def to_json(self) -> dict[str, object]:
        return {"adopted": [a.to_json() for a in self.adopted],
                "refused": [r.to_json() for r in self.refused]}


def adopt(here: Here, paths: Sequence[str], all_foreign: bool) -> AdoptResult:
    """`vwt adopt`: the worktrees at `paths` (relative to where the caller stands), or every
    foreign one of this repository."""
    if all_foreign == bool(paths):
        raise VwtError("name the worktrees to adopt (PATH...), or pass --all", 2)
    wanted = [row.path for row in foreign_of(here, False)] if all_foreign else \
        [os.path.join(here.cwd, p) for p in paths]
    return adopt_paths(here.root, wanted)


def adopt_paths(root: Root, paths: list[str]) -> AdoptResult:
    """Adopt each path in turn (the checks, then the move), reporting every refusal."""
    result = AdoptResult([], [])
    for given in dict.fromkeys(paths):
        path = os.path.realpath(os.path.abspath(given))
        try:
            result.adopted.append(_adopt_one(root, path))
        except Refused as exc:
            result.refused.append(RefusedPath(path, exc.reason, exc.message))
    return result


def _adopt_one(root: Root, path: str) -> Adopted:
    if not os.path.lexists(path):
        earlier = _adopted_before(root, path)
        if earlier is not None:
            return earlier
    try:
        repo, source = _worktree_at(root, path)
        _check_movable(source)
        tool = made_by(path)
        with prune_lock(root):  # the same lock `new` reserves under: no name is taken twice
            if os.stat(path).st_dev != os.stat(root.path).st_dev:
                raise Refused(OTHER_FILESYSTEM, f"{path} is on another filesystem than "
                              f"{root.path}; a move would have to copy it")
            claim, record, starting = _reserve_name(repo, os.path.basename(path), source, tool)
            try:
                checkpoint("adopt.reserved")
                record = leasing.lease_reserved(root, claim, record, leasing.count_for_checkout(
                    root.home, source.path))
                lock_source(claim, source)
            except BaseException:
                unreserve(claim, starting)
                raise
    except (VwtError, OSError):
        if os.path.lexists(path):
            raise
        raise Refused(NOT_FOUND, f"{path} went away while it was being checked (another "
                      "process moved or removed it)") from None
    try:
        move_in(claim, record, source)
    except BaseException as exc:
        if os.path.lexists(f"{claim.checkout}/.git"):  # moved: prune finishes it
            starting.release()
            if isinstance(exc, VwtError):
                raise VwtError(f"adopting {path} stopped after moving it to {claim.checkout} "
                               f"({exc.message}); run vwt prune to finish it") from None
            raise
        unreserve(claim, starting)
        raise
    starting.release()
    return Adopted(claim.checkout, claim.name, path, record.branch, tool, claim.bucket)


def _adopted_before(root: Root, path: str) -> Adopted | None:
    """The worktree adopted from `path` already: the same command run twice, or again after
    it failed half way (a full disk, a kill), which is then finished as prune would."""
    for bucket in root.buckets():
        for claim in root.claims_in(bucket):
            entry = load_entry(claim)
            record = entry.record if entry else None
            if record is None or source_of(record) != path:
                continue
            if record.reserved:
                record = _finish_reserved(claim, record)
                if record is None:
                    return None
            return Adopted(claim.checkout, claim.name, path, record.branch, made_by_of(record),
                           bucket)
    return None


def _finish_reserved(claim: Claim, record: Record) -> Record | None:
    """Finish an adoption that moved the folder and then stopped; None when it had not
    moved it (prune drops that reservation)."""
    with prune_lock(claim.root):
        try:
            starting = acquire_holder(claim, STARTING)
        except VwtError:
            raise Refused(IN_USE, f"{claim.checkout} is being adopted by another process "
                          "right now") from None
    try:
        if is_empty_dir(claim.checkout):
            return None
        return finish_interrupted(claim, record)
    finally:
        starting.release()


def _worktree_at(root: Root, path: str) -> tuple[Repo, Checkout]:
    """The repository and the linked worktree whose top level is `path`, or Refused."""
    if not os.path.isdir(path):
        raise Refused(NOT_FOUND, f"{path} is not a folder")
    if path == root.path or path.startswith(root.path + "/"):
        raise Refused(MANAGED, f"{path} is inside the managed root already; see vwt list")
    try:
        info = g.discover(path)
    except NotARepository:
        raise Refused(NOT_A_WORKTREE, f"{path} is not inside a git worktree") from None
    if info.toplevel != path:
        raise Refused(NOT_A_WORKTREE, f"{path} is inside the worktree {info.toplevel}; "
                      "pass its top folder")
    if path == info.repo_root:
        raise Refused(MAIN_WORKTREE, f"{path} is the repository's main working tree; "
                      "only linked worktrees can be adopted")
    source = linked_checkout(path)
    if source is None or source.common_dir != info.common_dir:
        raise Refused(NOT_A_WORKTREE, f"{path} is not a linked worktree (git worktree add) "
                      "of a repository")
    return Repo(root, info), source


def _check_movable(source: Checkout) -> None:
    """What `git worktree move` would refuse (or need --force for), a detached HEAD, and a
    process working inside."""
    reason = lock_reason(source.admin_dir)
    if reason is not None:
        why = f" ({reason})" if reason else ""
        raise Refused(LOCKED, f"{source.path} is locked{why}; unlock it first "
                      f"(git worktree unlock {source.path})")
    if source.branch is None:
        raise Refused(DETACHED_HEAD, f"{source.path} has a detached HEAD, and a managed "
                      f"worktree needs a branch: git -C {source.path} switch -c BRANCH, "
                      "then adopt it")
    holding = _submodules(source)
    if holding:
        raise Refused(SUBMODULES, f"{source.path} holds submodules ({holding}); git cannot "
                      "move a worktree with submodules")
    users = processes_inside([source.path])[source.path]
    if users:
        raise Refused(IN_USE, f"{source.path} is in use: process "
                      f"{', '.join(map(str, users[:5]))} has its current directory inside; "
                      "adopt it when they leave")


def _submodules(source: Checkout) -> str | None:
    """Why git would call it a worktree with submodules (as `git worktree move` checks):
    a `modules` folder in its git admin folder, or a checked-out gitlink."""
    if os.path.isdir(f"{source.admin_dir}/modules"):
        return f"{source.admin_dir}/modules"
    out = g.Git(source.path).out("ls-files", "--stage", "-z", env={"GIT_OPTIONAL_LOCKS": "0"})
    for entry in out.split("\0"):
        if entry.startswith("160000 "):
            gitlink = entry.split("\t", 1)[1]
            if os.path.lexists(f"{source.path}/{gitlink}/.git"):
                return gitlink
    return None


def _reserve_name(repo: Repo, folder: str, source: Checkout, tool: str
                  ) -> tuple[Claim, Record, Holder]:
    """Under the prune lock: the first free name from the folder's (made valid as §3 makes
    a prompt's slug valid), reserved as `new` reserves one."""
    assert source.branch is not None
    base = folder if not path_segment_problem(folder) else slugify(folder) or random_slug()
    for name in candidate_names(base):
        claim = repo.claim(name)
        if path_segment_problem(name) or os.path.lexists(claim.folder) \
                or os.path.lexists(claim.checkout):
            continue
        record = adoption_record(
            Record(name=name, branch=source.branch, repo_root=repo.info.repo_root,
                   base_commit=None, branch_created=False, claimed_at=utc_now()),
            source.path, tool)
        return claim, record, reserve(claim, record)
    raise VwtError(f"all names from {base} to {base}-100 are taken in this repository")
