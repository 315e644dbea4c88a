"""record.json and recovery.json: parsing that fails closed, writing that is atomic.

Unknown fields are carried through a rewrite untouched, because Mistral Vibe
writes the same files and may know fields we do not.
"""

from __future__ import annotations

import json
import os
import re
import time
from functools import cache

from .files import write_atomically
from .light import NamedTuple
from .names import path_segment_problem

TYPE_CHECKING = False  # `typing` is slow to import; mypy treats this as True
if TYPE_CHECKING:
    from typing import Any

VERSION = 1
MAX_RECORD_BYTES = 1 << 20
MAX_PORTS = 100  # the largest block of ports a worktree may lease (SPEC §17)
_CHUNK = 1 << 14
_HEX_DIGITS = "0123456789abcdef"


class CorruptRecord(Exception):
    """A record we cannot trust: reported as `broken`, never acted upon."""


def utc_now() -> str:
    """UTC ISO-8601 with a `Z` suffix: Vibe's retention fails on a zone-less stamp."""
    now = time.time()
    whole = int(now)
    micro = int((now - whole) * 1e6)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{micro:06d}Z"


# The form we and Vibe write, parsed without importing datetime (start-up time). The
# pattern checks the ranges itself, so only days 29 to 31 need a look at the calendar.
@cache  # compiled on first use: `vwt new` never reads a timestamp
def _utc_stamp_pattern() -> re.Pattern[str]:
    return re.compile(
        r"(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):([0-5]\d):([0-5]\d)"
        r"(?:\.(\d{1,6}))?(?:Z|\+00:00)"
    )


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


def _utc_stamp(text: str) -> re.Match[str] | None:
    match = _utc_stamp_pattern().fullmatch(text)
    if match and match[3] > "28" and int(match[3]) > _month_days(int(match[1]), int(match[2])):
        return None
    return match


def _other_iso_epoch(text: str) -> float:
    """Any other ISO-8601 form, through datetime; a stamp without a zone is taken as UTC."""
    from datetime import UTC, datetime

    stamp = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


def check_timestamp(text: str) -> None:
    """ValueError unless `text` is an ISO-8601 timestamp."""
    if _utc_stamp(text) is None:
        _other_iso_epoch(text)


def parse_timestamp(text: str) -> float:
    """Seconds since the epoch; a stamp without a zone is taken as UTC. ValueError if bad."""
    match = _utc_stamp(text)
    if match is None:
        return _other_iso_epoch(text)
    year, month, day, hour, minute, second = map(int, match.groups()[:6])
    fraction = int((match[7] or "0").ljust(6, "0")) / 1e6
    return _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second \
        + fraction


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

    @property
    def sparse(self) -> tuple[str, ...]:
        """The folders of a sparse checkout (our own optional key; empty: a full one)."""
        return _strings(self.extra.get("sparse"))

    @property
    def ports(self) -> tuple[int, ...] | None:
        """The block of ports leased to it (our own optional key; SPEC §17), None when the
        record names none (a worktree Vibe made, or one made before leases)."""
        return port_block(self.extra.get("ports"))

    def with_ports(self, ports: tuple[int, ...]) -> Record:
        return self._replace(extra={**self.extra, "ports": list(ports)})

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

    @property
    def sparse(self) -> tuple[str, ...]:
        """The sparse folders of the removed worktree, so restore recreates the same set."""
        return _strings(self.extra.get("sparse"))

    @property
    def ports(self) -> tuple[int, ...] | None:
        """The ports the removed worktree had leased, which restore asks for again."""
        return port_block(self.extra.get("ports"))

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


def port_block(value: object) -> tuple[int, ...] | None:
    """`value` as a block of consecutive TCP ports (a list of 1 to MAX_PORTS whole numbers,
    each one more than the one before), else None."""
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_PORTS:
        return None
    first = value[0]
    if isinstance(first, bool) or not isinstance(first, int) or first < 1 \
            or first + len(value) - 1 > 65535 or value != list(range(first, first + len(value))):
        return None
    return tuple(value)


def _strings(value: object) -> tuple[str, ...]:
    """A list of strings from a record's optional key; anything else reads as empty."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return ()
    return tuple(value)


_RECORD_FIELDS = frozenset({
    "version", "name", "branch", "repo_root", "base_commit", "branch_created", "claimed_at",
    "session_dirs", "reap_requested", "moved_checkout_admin",
})
_RECOVERY_FIELDS = frozenset({
    "version", "name", "branch", "repo_root", "base_commit", "snapshot_ref", "removed_at",
})


def read_limited(path: str) -> bytes:
    """The file's bytes (at most MAX_RECORD_BYTES), never following a symlink or blocking.

    No fstat: reading to the end of the file instead costs a record one cheap syscall
    less. A folder fails to read, a FIFO reads empty, and only root can plant a device.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        chunks, size = [], 0
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_RECORD_BYTES:
                raise CorruptRecord(f"it is larger than {MAX_RECORD_BYTES} bytes")
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


_DECODER = json.JSONDecoder()


def _parse_json(text: str) -> object:
    """json.loads without its two layers of Python calls (a listing parses a thousand)."""
    text = text.lstrip()
    data, end = _DECODER.raw_decode(text)
    if text[end:].strip():
        raise ValueError(f"extra data at character {end}")
    return data


def _load_object(path: str) -> dict[str, Any]:
    try:
        raw = read_limited(path)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise CorruptRecord(f"it cannot be read ({exc.strerror})") from None
    try:
        data = _parse_json(raw.decode("utf-8"))
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
    if not isinstance(value, str) or len(value) not in (40, 64) or value.strip(_HEX_DIGITS):
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
        check_timestamp(value)
    except ValueError:
        raise CorruptRecord(f"{key!r} is not an ISO-8601 timestamp") from None
    return value


def _unknown_fields(data: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """The fields a rewrite must carry through untouched (usually none)."""
    if data.keys() <= known:
        return {}
    return {k: v for k, v in data.items() if k not in known}


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
    return Record(  # positionally: a listing builds a thousand of these
        name,
        branch,
        repo_root,
        _oid_or_none(data, "base_commit"),
        branch_created,
        _timestamp(data, "claimed_at"),
        tuple(sessions),
        data.get("reap_requested") is True,
        moved,
        _unknown_fields(data, _RECORD_FIELDS),
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
        extra=_unknown_fields(data, _RECOVERY_FIELDS),
    )


def write_json_atomically(path: str, data: dict[str, Any]) -> None:
    """2-space JSON, mode 0600, through `files.write_atomically`: never left half written."""
    payload = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    write_atomically(path, payload)


def write_record(path: str, record: Record) -> None:
    write_json_atomically(path, record.to_json())


def write_recovery(path: str, recovery: Recovery) -> None:
    write_json_atomically(path, recovery.to_json())
