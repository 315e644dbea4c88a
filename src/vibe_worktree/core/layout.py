"""Where things live: the home, the managed root, buckets and claim folders.

Paths are plain strings joined with "/" (POSIX only, as the spec is): `pathlib`
costs milliseconds to import and `os.path.join` is slow in loops over
thousands of records; the start-up path is most of what a small command costs.
"""

from __future__ import annotations

import os
import stat

from .errors import ValidationFailed
from .light import NamedTuple

try:  # the builtin module avoids loading OpenSSL, which `hashlib` does
    from _sha256 import sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import sha256

CLAIMS = ".claims"
TRASH = ".trash"
RECORD = "record.json"
RECOVERY = "recovery.json"
HOLDERS = "holders"


def resolve_home(explicit: str | None = None) -> str:
    """`--home` beats `VIBE_HOME`, which beats `~/.vibe`; returned absolute and resolved."""
    home = explicit or os.environ.get("VIBE_HOME") or "~/.vibe"
    return os.path.realpath(os.path.expanduser(home))


def bucket_name(repo_root: str, common_dir: str) -> str:
    """`<repo_root.name>-<first 12 hex of sha256(common_dir)>`: one bucket per repository."""
    digest = sha256(common_dir.encode()).hexdigest()[:12]
    return f"{os.path.basename(repo_root.rstrip(os.sep)) or 'repo'}-{digest}"


def bucket_matches(bucket: str, common_dir: str) -> bool:
    """True when `bucket` is the one a repository with this common git dir maps to."""
    digest = sha256(common_dir.encode()).hexdigest()[:12]
    return bucket.endswith(f"-{digest}")


class Root(NamedTuple):
    """The managed root `<home>/worktrees` and the fixed files inside it.

    `path` is resolved once: the root itself may be a symlink (to a larger disk,
    say); below it, nothing may be.
    """

    home: str
    path: str

    @classmethod
    def at(cls, home: str) -> Root:
        return cls(home, os.path.realpath(f"{home}/worktrees"))

    @property
    def claims(self) -> str:
        return f"{self.path}/{CLAIMS}"

    @property
    def trash(self) -> str:
        return f"{self.path}/{TRASH}"

    @property
    def prune_lock(self) -> str:
        return f"{self.claims}/.prune"

    @property
    def registry_lock(self) -> str:
        return f"{self.claims}/.registry"

    def landing_lock(self, bucket: str) -> str:
        return f"{self.claims}/.landing-{bucket}"

    @property
    def config_file(self) -> str:
        return f"{self.home}/config.toml"

    def claim(self, bucket: str, name: str) -> Claim:
        return Claim(self, bucket, name)

    def buckets(self) -> list[str]:
        """Bucket folders that hold claims, sorted."""
        return sorted(_subdirectories(self.claims))

    def claims_in(self, bucket: str) -> list[Claim]:
        folder = f"{self.claims}/{bucket}"
        return [Claim(self, bucket, name) for name in sorted(_subdirectories(folder))]


class Claim(NamedTuple):
    """One managed worktree's address: (bucket, name) travel together, never apart."""

    root: Root
    bucket: str
    name: str

    @property
    def checkout(self) -> str:
        return f"{self.root.path}/{self.bucket}/{self.name}"

    @property
    def folder(self) -> str:
        return f"{self.root.path}/{CLAIMS}/{self.bucket}/{self.name}"

    @property
    def record_path(self) -> str:
        return f"{self.folder}/{RECORD}"

    @property
    def recovery_path(self) -> str:
        return f"{self.folder}/{RECOVERY}"

    @property
    def holders_dir(self) -> str:
        return f"{self.folder}/{HOLDERS}"

    @property
    def snapshot_ref(self) -> str:
        return f"refs/vibe/reaped/{self.name}"

    def trash_path(self) -> str:
        return os.path.join(self.root.trash, f"{self.bucket}-{self.name}-{os.urandom(16).hex()}")


def _subdirectories(folder: str) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return [
                e.name
                for e in entries
                if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
            ]
    except (FileNotFoundError, NotADirectoryError):
        return []




def assert_real_directories(claim: Claim) -> None:
    """Refuse when any step from the root down to the checkout is not a real directory.

    A symlink planted at the bucket or the checkout would make a removal or a
    reuse act on a directory outside the root.
    """
    for path in (f"{claim.root.path}/{claim.bucket}", claim.checkout):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            raise ValidationFailed(f"{path} does not exist") from None
        if stat.S_ISLNK(mode):
            raise ValidationFailed(f"{path} is a symlink; refusing to follow it")
        if not stat.S_ISDIR(mode):
            raise ValidationFailed(f"{path} is not a directory")


def first_planted(paths: tuple[str, ...]) -> str | None:
    """The first of `paths` (outermost first) that exists but is not a real directory, such
    as a planted symlink; None when all are real or the chain stops at a missing one."""
    for path in paths:
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return path
        except FileNotFoundError:
            return None
    return None


def ensure_dir(path: str, root: str) -> None:
    """Create `path` (inside the managed `root`), proving every folder from `root` down is a
    real directory: a planted symlink must not send our files outside the root."""
    relative = os.path.relpath(path, root)
    if relative.startswith(".."):
        raise ValidationFailed(f"{path} is outside the managed root {root}")
    current = root
    for part in ([] if relative == "." else relative.split(os.sep)):
        current = f"{current}/{part}"
        try:
            os.mkdir(current, 0o755)
        except FileExistsError:
            pass
        except FileNotFoundError:
            os.makedirs(current, 0o755, exist_ok=True)
        if not stat.S_ISDIR(os.lstat(current).st_mode):
            raise ValidationFailed(f"{current} is not a real directory; refusing to use it")


def is_empty_dir(path: str) -> bool:
    """Nothing stands at `path`, or an empty real directory does (never a symlink)."""
    if os.path.islink(path):
        return False
    try:
        return not os.listdir(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def unlink_if_exists(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def rmdir_if_empty(path: str) -> bool:
    """`rmdir`, never a recursive delete: a folder someone still uses must survive."""
    try:
        os.rmdir(path)
        return True
    except OSError:
        return False


def claim_containing(root: Root, path: str, exact: bool = False) -> Claim | None:
    """The managed checkout `path` is (with `exact`) or lies in, found without git."""
    for candidate in dict.fromkeys((os.path.abspath(path), os.path.realpath(path))):
        relative = os.path.relpath(candidate, root.path)
        parts = relative.split(os.sep)
        if relative.startswith("..") or len(parts) < 2 or parts[0].startswith("."):
            continue
        if exact and len(parts) != 2:
            continue
        return root.claim(parts[0], parts[1])
    return None
