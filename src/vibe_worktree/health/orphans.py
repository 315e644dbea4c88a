"""Doctor's two repairs: archive the worktrees of vanished repositories, and bring back
those of a repository that was moved.

Archiving is the only place doctor deletes anything, and only after the archive
was read back and matched against every file of the checkout. Relocating deletes
nothing: it renames checkouts and claim folders into the repository's current
bucket, lets git repair its links, and rewrites `repo_root` in the records.
Both take a `.removing` hold (or the registry lock) so a live session's worktree
is skipped, never touched.
"""

from __future__ import annotations

import hashlib
import os
import stat

from ..core import git as g
from ..core import leases
from ..core.errors import DiskFull, HeldError, NotARepository, VwtError, disk_is_full
from ..core.faults import checkpoint
from ..core.layout import Claim, Root, bucket_name, ensure_dir, rmdir_if_empty, unlink_if_exists
from ..core.light import NamedTuple
from ..core.locks import live_holders, prune_lock, registry_lock
from ..core.records import read_recovery, write_json_atomically, write_record
from ..lifecycle.remove import acquire_removal, tidy_claim_folders
from ..lifecycle.trash import delete_trash, move_to_trash
from ..lifecycle.worktrees import entries, load_entry

ORPHANS = ".orphans"
ARCHIVED = "archived"
DROPPED = "dropped"  # nothing was left to archive: the claim alone went
MOVED = "moved"
KEPT_IN_USE = "kept_in_use"
FAILED = "failed"


class Repaired(NamedTuple):
    """What one repair did to one worktree."""

    bucket: str
    name: str
    outcome: str
    path: str  # the archive, or the checkout's new path
    detail: str = ""

    def to_json(self) -> dict[str, object]:
        return {"bucket": self.bucket, "name": self.name, "outcome": self.outcome,
                "path": self.path, "detail": self.detail}


# -- archive -----------------------------------------------------------------------------------
def archive_orphans(root: Root, cwd: str) -> list[Repaired]:
    """Archive every checkout whose repository is gone, then drop its claim."""
    from .doctor import current_repo, moved_from, orphan_detail

    here = current_repo(cwd)
    relocatable = moved_from(root, here) if here else {}
    done = []
    for entry in entries(root, root.buckets()):
        key = (entry.claim.bucket, entry.name)
        if key in relocatable or orphan_detail(entry) is None:
            continue
        done.append(_archive_one(entry.claim))
    return done


def _archive_one(claim: Claim) -> Repaired:
    from .doctor import orphan_detail

    try:
        removing = acquire_removal(claim, frozenset())
    except HeldError as exc:
        return Repaired(claim.bucket, claim.name, KEPT_IN_USE, claim.checkout, exc.message)
    try:
        entry = load_entry(claim)
        if entry is None or orphan_detail(entry) is None:
            return Repaired(claim.bucket, claim.name, FAILED, claim.checkout,
                            "it changed meanwhile; run vwt doctor again")
        archive = ""
        if os.path.lexists(claim.checkout):
            try:
                archive = _write_verified_archive(claim)
            except (OSError, VwtError) as exc:
                return Repaired(claim.bucket, claim.name, FAILED, claim.checkout,
                                f"could not archive it ({_why(exc)}); nothing was deleted")
            checkpoint("archive.written")
            delete_trash(move_to_trash(claim))
        unlink_if_exists(claim.recovery_path)
        unlink_if_exists(claim.record_path)
        leases.release(claim.root, claim.bucket, claim.name)
    finally:
        removing.release()
        tidy_claim_folders(claim)
    if archive:
        return Repaired(claim.bucket, claim.name, ARCHIVED, archive)
    return Repaired(claim.bucket, claim.name, DROPPED, claim.checkout,
                    "its checkout was already gone")


def _archive_path(claim: Claim) -> str:
    folder = f"{claim.root.path}/{ORPHANS}"
    base = f"{folder}/{claim.bucket}-{claim.name}"
    path, n = f"{base}.tar.gz", 1
    while os.path.lexists(path):  # an earlier archive of the same name is never replaced
        n += 1
        path = f"{base}-{n}.tar.gz"
    return path


def _write_verified_archive(claim: Claim) -> str:
    """A tar.gz of the whole checkout (untracked and ignored files included), read back and
    compared with the files before anyone deletes them."""
    import tarfile

    mode = os.lstat(claim.checkout).st_mode
    if not stat.S_ISDIR(mode):
        raise VwtError(f"{claim.checkout} is not a real folder")
    ensure_dir(f"{claim.root.path}/{ORPHANS}", claim.root.path)
    final = _archive_path(claim)
    temp = f"{final}.{os.urandom(6).hex()}.tmp"
    try:
        with tarfile.open(temp, "w:gz") as tar:
            tar.add(claim.checkout, arcname=claim.name, recursive=True)
        with open(temp, "rb") as handle:
            os.fsync(handle.fileno())
        expected = _files_on_disk(claim.checkout, claim.name)
        actual = _files_in_archive(temp)
        if expected != actual:
            differing = sorted(set(expected.items()) ^ set(actual.items()))
            raise VwtError(f"the archive does not match the files (first: {differing[0][0]})")
        os.rename(temp, final)
    except BaseException:
        unlink_if_exists(temp)
        raise
    return final


def _why(exc: OSError | VwtError) -> str:
    if isinstance(exc, VwtError):
        return exc.message
    if disk_is_full(exc):
        return DiskFull(f"writing {exc.filename}" if exc.filename else None).message
    return f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc.strerror or exc)


def _digest(handle: object) -> str:
    sha = hashlib.sha256()
    while chunk := handle.read(1 << 20):  # type: ignore[attr-defined]
        sha.update(chunk)
    return sha.hexdigest()


def _files_on_disk(top: str, arcname: str) -> dict[str, str]:
    """relative path -> what it is (a file's sha256, a link's target, `dir`), links unfollowed."""
    found = {arcname: "dir"}
    for folder, subfolders, files in os.walk(top):
        rel = arcname + folder[len(top):]
        for name in subfolders + files:
            path = f"{folder}/{name}"
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                found[f"{rel}/{name}"] = "link:" + os.readlink(path)
            elif stat.S_ISDIR(mode):
                found[f"{rel}/{name}"] = "dir"
            elif stat.S_ISREG(mode):
                with open(path, "rb") as handle:
                    found[f"{rel}/{name}"] = "file:" + _digest(handle)
            else:
                found[f"{rel}/{name}"] = f"special:{stat.S_IFMT(mode)}"
    return found


def _files_in_archive(path: str) -> dict[str, str]:
    import tarfile

    found = {}
    with tarfile.open(path, "r:gz") as tar:
        for member in tar:
            if member.issym():
                found[member.name] = "link:" + member.linkname
            elif member.isdir():
                found[member.name] = "dir"
            elif member.isfile():
                extracted = tar.extractfile(member)
                assert extracted is not None
                found[member.name] = "file:" + _digest(extracted)
            else:
                found[member.name] = f"member:{member.type!r}"
    return found


# -- relocate ----------------------------------------------------------------------------------
def relocate(root: Root, cwd: str) -> list[Repaired]:
    """Inside a moved repository: move its managed checkouts and claims from the bucket of
    its old location into its current one, repair git's links, rewrite the records."""
    try:
        info = g.discover(cwd)
    except NotARepository:
        raise VwtError("run vwt doctor --relocate inside the repository that was moved") from None
    from .doctor import linked_checkouts

    bucket = bucket_name(info.repo_root, info.common_dir)
    done: list[Repaired] = []
    with prune_lock(root):  # no creation, attach or retention while claims change buckets
        linked = [(b, n) for b, n in linked_checkouts(root, info.common_dir) if b != bucket]
        old_buckets = {b for b, _n in linked}
        for old in sorted(old_buckets):
            for claim in root.claims_in(old):
                done.append(_move_claim(claim, root.claim(bucket, claim.name)))
        # Every checkout git still knows by its old path and that now sits in the new
        # bucket, also those a crashed run had moved already.
        repair = sorted({root.claim(bucket, n).checkout for _b, n in linked
                         if os.path.isdir(root.claim(bucket, n).checkout)})
        if repair:
            g.Git(info.repo_root).run("worktree", "repair", *repair, check=False)
        checkpoint("relocate.repaired")
        _rewrite_repo_roots(root, bucket, info.repo_root)
        checkpoint("relocate.recorded")
        for old in old_buckets:
            rmdir_if_empty(f"{root.claims}/{old}")
            rmdir_if_empty(f"{root.path}/{old}")
    return done


def _move_claim(old: Claim, new: Claim) -> Repaired:
    """Rename the checkout, then the claim folder, under the registry lock (no holder can
    appear meanwhile). Each step is skipped when a crashed run had already done it."""
    with registry_lock(old.root):
        holders = live_holders(old)
        if holders:
            return Repaired(old.bucket, old.name, KEPT_IN_USE, old.checkout,
                            f"held by a live session ({', '.join(holders)}); run "
                            "vwt doctor --relocate again when it ends")
        if os.path.lexists(old.checkout):
            if os.path.lexists(new.checkout):
                return Repaired(old.bucket, old.name, FAILED, old.checkout,
                                f"{new.checkout} exists already; nothing moved")
            ensure_dir(os.path.dirname(new.checkout), new.root.path)
            os.rename(old.checkout, new.checkout)
            checkpoint("relocate.checkout_moved")
        if os.path.lexists(new.folder):
            return Repaired(old.bucket, old.name, FAILED, old.folder,
                            f"{new.folder} exists already; its checkout is at {new.checkout}")
        ensure_dir(os.path.dirname(new.folder), new.root.path)
        os.rename(old.folder, new.folder)
        checkpoint("relocate.claim_moved")
        leases.move(old.root, old.bucket, old.name, new.bucket)  # its ports go with it
    return Repaired(old.bucket, old.name, MOVED, new.checkout, f"now in bucket {new.bucket}")


def _rewrite_repo_roots(root: Root, bucket: str, repo_root: str) -> None:
    """Records (and recovery records) of this bucket that still name the old location."""
    for claim in root.claims_in(bucket):
        entry = load_entry(claim)
        if entry is None or entry.problem is not None:
            continue
        if entry.record is not None and entry.record.repo_root != repo_root:
            write_record(claim.record_path, entry.record._replace(repo_root=repo_root))
        if entry.recovery is not None and entry.recovery.repo_root != repo_root:
            recovery = read_recovery(claim.recovery_path, claim.name)
            write_json_atomically(claim.recovery_path,
                                  recovery._replace(repo_root=repo_root).to_json())
