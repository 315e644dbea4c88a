"""The settings files and the approvals store.

`.vibe/worktree.toml` (the project's, committed with the code) and `<home>/worktree.toml`
(the user's) hold the tables vwt reads: `[[hooks]]` (`hooks.py`), `[pool]` (`pool.py`),
`[ports]` (`leasing.py`), `[env]` (`environment.py`), `[land]` (below: `vwt land`'s gate), and
room for more.
`<home>/worktree-approvals.json` keeps, per repository, which project-defined commands the
user approved: a project file comes with the code, so a branch may change it, and what it
would run needs the user's yes first.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from ..core.errors import VwtError
from ..core.light import NamedTuple
from ..core.records import utc_now, write_json_atomically

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..core.git import Git


PROJECT_FILE = ".vibe/worktree.toml"
USER_FILE = "worktree.toml"
APPROVALS_FILE = "worktree-approvals.json"


class HooksFileError(VwtError):
    """A settings file that cannot be trusted as a whole: none of its hooks runs (the name
    is the hooks', which were its first table)."""


def user_file(home: str) -> str:
    return f"{home}/{USER_FILE}"


def project_file(checkout: str) -> str:
    return f"{checkout}/{PROJECT_FILE}"


def read_toml(path: str) -> dict[str, Any] | None:
    """The parsed file, None when there is none; HooksFileError when it is not TOML."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise HooksFileError(f"{path}: cannot be read ({exc.strerror}); fix it or pass "
                             "--no-hooks") from None
    return parse_toml(raw, path)


def parse_toml(raw: bytes, path: str) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise HooksFileError(f"{path}: not valid TOML ({exc}); fix it or pass --no-hooks"
                             ) from None


_AT_COMMIT: dict[tuple[str, str], tuple[dict[str, Any] | None, str]] = {}


def project_at(git: Git, toplevel: str, commit: str) -> tuple[dict[str, Any] | None, str]:
    """The parsed `.vibe/worktree.toml` of `commit` (a new worktree's start point) and the
    label that names it in messages; None when it has none. Asked of git only when the
    checkout at `toplevel` has that file (one stat; `new` pays no git call otherwise), and
    once per process: the sparse folders and the `[ports]` count read the same file."""
    label = f"{PROJECT_FILE} (at {commit[:12]})"
    if not os.path.exists(project_file(toplevel)):
        return None, label
    key = (git.cwd, commit)
    if key not in _AT_COMMIT:
        from ..core.git import file_at

        raw = file_at(git, commit, PROJECT_FILE)
        _AT_COMMIT[key] = (None if raw is None else parse_toml(raw, label)), label
    return _AT_COMMIT[key]


class Approval(NamedTuple):
    """One approved command: the key it is kept by (a digest of exactly what runs), and what
    the file shows a person beside it."""

    key: str
    what: dict[str, str]


def approvals_path(home: str) -> str:
    return f"{home}/{APPROVALS_FILE}"


def _read_approvals(home: str) -> dict[str, Any]:
    path = approvals_path(home)
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return {"version": 1, "buckets": {}}
    except (OSError, ValueError) as exc:
        raise VwtError(f"{path} cannot be read ({exc}); fix or delete it") from None
    if not isinstance(data, dict) or not isinstance(data.get("buckets"), dict):
        raise VwtError(f"{path} is not an approvals file; fix or delete it")
    return data


def approved_keys(home: str, bucket: str) -> set[str]:
    entries = _read_approvals(home)["buckets"].get(bucket)
    return set(entries) if isinstance(entries, dict) else set()


def change_approvals(home: str, bucket: str, approvals: Sequence[Approval], approve: bool
                     ) -> None:
    """Approve or revoke `approvals` for `bucket`, under a lock, written atomically (0600)."""
    from ..core.locks import locked

    os.makedirs(home, exist_ok=True)
    with locked(f"{approvals_path(home)}.lock", home):
        data = _read_approvals(home)
        entries = data["buckets"].setdefault(bucket, {})
        if not isinstance(entries, dict):
            entries = data["buckets"][bucket] = {}
        for approval in approvals:
            if approve:
                entries[approval.key] = {**approval.what, "approved_at": utc_now()}
            else:
                entries.pop(approval.key, None)
        if not entries:
            del data["buckets"][bucket]
        write_json_atomically(approvals_path(home), data)
        os.chmod(approvals_path(home), 0o600)


# -- [land] ------------------------------------------------------------------------------------
LAND_TABLE = "land"
DEFAULT_GATE_TIMEOUT = 1800.0
_LAND_KEYS = frozenset({"gate", "timeout"})


class LandSettings(NamedTuple):
    """The project's `[land]` table: the gate `vwt land` runs on each worktree (None: none),
    and the seconds after which it is killed."""

    gate: str | None = None
    timeout: float = DEFAULT_GATE_TIMEOUT
    file: str = ""  # where it was read, for messages


def land_settings(raw: bytes | None, label: str) -> LandSettings:
    """The `[land]` table of a `.vibe/worktree.toml` (`raw`, None when there is none);
    HooksFileError when the file or the table is broken (none of it is then used)."""
    if raw is None:
        return LandSettings(file=label)
    table = parse_toml(raw, label).get(LAND_TABLE)
    if table is None:
        return LandSettings(file=label)

    def bad(problem: str) -> HooksFileError:
        return HooksFileError(f"{label}: [land] {problem}; fix it (or pass --gate CMD)")

    if not isinstance(table, dict):
        raise bad("must be a table")
    unknown = sorted(set(table) - _LAND_KEYS)
    if unknown:
        raise bad(f"has an unknown key {unknown[0]!r}")
    gate = table.get("gate")
    if gate is not None and (not isinstance(gate, str) or not gate.strip()):
        raise bad("gate must be a non-empty string")
    timeout = table.get("timeout", DEFAULT_GATE_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise bad("timeout must be a positive number of seconds")
    return LandSettings(gate, float(timeout), label)
