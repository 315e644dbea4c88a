"""record.json and recovery.json: parsing that fails closed, writing that is atomic.

Unknown fields are carried through a rewrite untouched, because Mistral Vibe
writes the same files and may know fields we do not.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from typing import NamedTuple

from .names import path_segment_problem

TYPE_CHECKING = False  # `typing` is slow to import; mypy treats this as True
if TYPE_CHECKING:
    from typing import Any

VERSION = 1
MAX_RECORD_BYTES = 1 << 20
_OID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


class CorruptRecord(Exception):
    """A record we cannot trust: reported as `broken`, never acted upon."""


def utc_now() -> str:
    """UTC ISO-8601 with a `Z` suffix: Vibe's retention fails on a zone-less stamp."""
    now = time.time()
    whole = int(now)
    micro = int((now - whole) * 1e6)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{micro:06d}Z"


# The form we and Vibe write, parsed without importing datetime (start-up time).
_UTC_STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?:Z|\+00:00)")


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _month_days(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def parse_timestamp(text: str) -> float:
    """Seconds since the epoch; a stamp without a zone is taken as UTC. ValueError if bad."""
    match = _UTC_STAMP.fullmatch(text)
    if match:
        year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
        if 1 <= month <= 12 and 1 <= day <= _month_days(year, month) and hour < 24 \
                and minute < 60 and second < 60:
            fraction = int((match.group(7) or "0").ljust(6, "0")) / 1e6
            days = _days_from_civil(year, month, day)
            return days * 86400 + hour * 3600 + minute * 60 + second + fraction
    from datetime import UTC, datetime  # any other ISO-8601 form

    stamp = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


class Record(NamedTuple):
    """A managed worktree: `base_commit` is None while it is only reserved."""

    name: str
    branch: str
    repo_root: str
    base_commit: str | None
    branch_created: bool
    claimed_at: str
    session_dirs: tuple[str, ...] = ()
    reap_requested: bool = False
    moved_checkout_admin: str | None = None
    extra: dict[str, Any] = {}  # noqa: RUF012 - never mutated; copied by to_json

    @property
    def reserved(self) -> bool:
        return self.base_commit is None

    def claimed_epoch(self) -> float:
        return parse_timestamp(self.claimed_at)

    def with_base(self, base_commit: str) -> Record:
        return self._replace(base_commit=base_commit)

    def to_json(self) -> dict[str, Any]:
        data = dict(self.extra)
        data.update(
            version=VERSION,
            name=self.name,
            branch=self.branch,
            repo_root=self.repo_root,
            base_commit=self.base_commit,
            branch_created=self.branch_created,
            claimed_at=self.claimed_at,
            session_dirs=list(self.session_dirs),
            reap_requested=self.reap_requested,
            moved_checkout_admin=self.moved_checkout_admin,
        )
        return data


class Recovery(NamedTuple):
    """What a snapshot-and-remove left behind so `restore` can bring it back."""

    name: str
    branch: str
    repo_root: str
    base_commit: str | None
    snapshot_ref: str
    removed_at: str
    extra: dict[str, Any] = {}  # noqa: RUF012 - never mutated; copied by to_json

    @property
    def branch_created(self) -> bool:
        """Our own addition (readers ignore unknown fields): was the branch ours?"""
        return self.extra.get("branch_created") is True

    def to_json(self) -> dict[str, Any]:
        data = dict(self.extra)
        data.update(
            version=VERSION,
            name=self.name,
            branch=self.branch,
            repo_root=self.repo_root,
            base_commit=self.base_commit,
            snapshot_ref=self.snapshot_ref,
            removed_at=self.removed_at,
        )
        return data


_RECORD_FIELDS = {
    "version", "name", "branch", "repo_root", "base_commit", "branch_created", "claimed_at",
    "session_dirs", "reap_requested", "moved_checkout_admin",
}
_RECOVERY_FIELDS = {
    "version", "name", "branch", "repo_root", "base_commit", "snapshot_ref", "removed_at",
}


def read_limited(path: str) -> bytes:
    """The file's bytes, refusing anything but a regular file of at most MAX_RECORD_BYTES."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CorruptRecord("it is not a regular file")
        if info.st_size > MAX_RECORD_BYTES:
            raise CorruptRecord(f"it is larger than {MAX_RECORD_BYTES} bytes")
        first = os.read(fd, info.st_size + 1)
        if len(first) <= info.st_size:  # the whole file in one read, as almost always
            return first
        chunks = [first]
        size = len(first)
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_RECORD_BYTES:
                raise CorruptRecord(f"it is larger than {MAX_RECORD_BYTES} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _load_object(path: str) -> dict[str, Any]:
    try:
        raw = read_limited(path)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise CorruptRecord(f"it cannot be read ({exc.strerror})") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptRecord(f"it is not valid UTF-8 JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CorruptRecord("it is not a JSON object")
    if data.get("version") != VERSION:
        raise CorruptRecord(f"unsupported version {data.get('version')!r}")
    return data


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise CorruptRecord(f"{key!r} is missing or not a string")
    return value


def _oid_or_none(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not _OID.fullmatch(value):
        raise CorruptRecord(f"{key!r} is not a commit id")
    return value


def _common_fields(data: dict[str, Any], expected_name: str) -> tuple[str, str, str]:
    name = _text(data, "name")
    if name != expected_name or path_segment_problem(name):
        raise CorruptRecord(f"its name {name!r} does not match its folder {expected_name!r}")
    repo_root = _text(data, "repo_root")
    if not os.path.isabs(repo_root) or "\0" in repo_root:
        raise CorruptRecord("'repo_root' is not an absolute path")
    return name, _text(data, "branch"), repo_root


def _timestamp(data: dict[str, Any], key: str) -> str:
    value = _text(data, key)
    try:
        parse_timestamp(value)
    except ValueError:
        raise CorruptRecord(f"{key!r} is not an ISO-8601 timestamp") from None
    return value


def read_record(path: str, expected_name: str) -> Record:
    """Parse a record.json; raise FileNotFoundError or CorruptRecord."""
    data = _load_object(path)
    name, branch, repo_root = _common_fields(data, expected_name)
    branch_created = data.get("branch_created")
    if not isinstance(branch_created, bool):
        raise CorruptRecord("'branch_created' is not a boolean")
    sessions = data.get("session_dirs") or []
    if not isinstance(sessions, list) or not all(isinstance(s, str) for s in sessions):
        raise CorruptRecord("'session_dirs' is not a list of paths")
    moved = data.get("moved_checkout_admin")
    if moved is not None and not isinstance(moved, str):
        raise CorruptRecord("'moved_checkout_admin' is not a path")
    return Record(
        name=name,
        branch=branch,
        repo_root=repo_root,
        base_commit=_oid_or_none(data, "base_commit"),
        branch_created=branch_created,
        claimed_at=_timestamp(data, "claimed_at"),
        session_dirs=tuple(sessions),
        reap_requested=data.get("reap_requested") is True,
        moved_checkout_admin=moved,
        extra={k: v for k, v in data.items() if k not in _RECORD_FIELDS},
    )


def read_recovery(path: str, expected_name: str) -> Recovery:
    """Parse a recovery.json; raise FileNotFoundError or CorruptRecord."""
    data = _load_object(path)
    name, branch, repo_root = _common_fields(data, expected_name)
    snapshot_ref = _text(data, "snapshot_ref")
    if not snapshot_ref.startswith("refs/vibe/reaped/"):
        raise CorruptRecord("'snapshot_ref' is not under refs/vibe/reaped/")
    return Recovery(
        name=name,
        branch=branch,
        repo_root=repo_root,
        base_commit=_oid_or_none(data, "base_commit"),
        snapshot_ref=snapshot_ref,
        removed_at=_timestamp(data, "removed_at"),
        extra={k: v for k, v in data.items() if k not in _RECOVERY_FIELDS},
    )


def write_json_atomically(path: str, data: dict[str, Any]) -> None:
    """Temp file in the same folder, fsync, rename: readers see the old or the new file."""
    folder = os.path.dirname(path)
    temp = os.path.join(folder, f".{os.path.basename(path)}.{os.urandom(6).hex()}.tmp")
    payload = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def write_record(path: str, record: Record) -> None:
    write_json_atomically(path, record.to_json())


def write_recovery(path: str, recovery: Recovery) -> None:
    write_json_atomically(path, recovery.to_json())
