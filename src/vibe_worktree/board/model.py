"""What the board shows: every managed worktree across repositories, and one in detail.

Rows are the `list --all --json` documents (so every field `list` gains later, such as
integration, reaches the page by itself) plus what a person glancing at the page wants:
the repository's name, who holds it (tool and pid where the holder file says), and when
it was last active. All reading; nothing here changes anything on disk.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from typing import Any

from ..api import Worktrees
from ..core import git as g
from ..core.errors import NotFound, VwtError
from ..core.files import copy_index
from ..core.layout import Claim
from ..core.locks import UNTRUSTED, live_holders, registry_read_lock
from ..core.names import path_segment_problem
from ..core.records import read_limited
from ..lifecycle.worktrees import (
    MISSING,
    READY,
    SNAPSHOT,
    housekeeping_git,
    load_entry,
    validate_checkout,
)

COMMITS_SHOWN = 200
DIFF_LIMIT = 1024 * 1024  # characters of diff sent to the page; the rest is cut
HOLDER_BYTES = 4096


def rows(wt: Worktrees) -> list[dict[str, object]]:
    """Every managed worktree of every repository, most recently active first."""
    found = []
    for row in wt.list(all_repos=True, with_status=True):
        data = row.to_json()
        claim = wt.root.claim(row.bucket, row.name)
        data["repository"] = os.path.basename(row.repo_root or "") or row.bucket
        data["problem"] = row.problem
        data["holder_details"] = holder_details(claim) if row.holders else []
        if row.state == SNAPSHOT:
            data.update(_recovery_fields(claim))
        data["active_at"] = _active_at(claim, data)
        found.append(data)
    found.sort(key=lambda d: (str(d["active_at"] or ""), str(d["name"])), reverse=True)
    return found


def running(wt: Worktrees) -> dict[tuple[str, str], dict[str, object]]:
    """(bucket, name) -> what runs inside that worktree (`vwt ps --all`): its leased ports,
    a link to each port a process inside listens on, the processes, and the mismatches
    (a leased port served from another folder)."""
    found: dict[tuple[str, str], dict[str, object]] = {}
    for item in wt.ps(all_repos=True).worktrees:
        found[(item.bucket, item.name)] = {
            "ports": list(item.ports),
            "links": [{"port": int(url.rsplit(":", 1)[1].rstrip("/")), "url": url}
                      for url in item.links],
            "processes": [p.to_json() for p in item.processes],
            "mismatches": [m.message for m in item.mismatches],
        }
    return found


def collisions(wt: Worktrees) -> dict[tuple[str, str], dict[str, object]]:
    """(bucket, name) -> where that worktree will conflict (`vwt conflicts --all`, §13):
    with its target and with other sessions. Empty when this version cannot tell."""
    forecast = getattr(wt, "conflicts", None)
    if forecast is None:
        return {}
    document = forecast(all_repos=True).to_json()
    marks: dict[tuple[str, str], dict[str, Any]] = {}

    def mark(bucket: str, name: str) -> dict[str, Any]:
        return marks.setdefault((bucket, name), {"target": None, "target_conflicts": [],
                                                 "with": []})

    for worktree in document["worktrees"]:
        if worktree.get("target_conflicts"):
            found = mark(worktree["bucket"], worktree["name"])
            found.update(target=worktree["target"],
                         target_conflicts=worktree["target_conflicts"])
    for pair in document["pairs"]:
        for mine, theirs in ((pair["a"], pair["b"]), (pair["b"], pair["a"])):
            mark(pair["bucket"], mine)["with"].append(
                {"name": theirs, "overlap": pair["overlap"], "conflicts": pair["conflicts"]})
    return marks


def holder_details(claim: Claim) -> list[dict[str, object]]:
    """The live holders with the tool and pid their file names, where it does."""
    with registry_read_lock(claim.root):
        ids = live_holders(claim)
    return [_holder(claim, holder_id) for holder_id in ids]


def _holder(claim: Claim, holder_id: str) -> dict[str, object]:
    found: dict[str, object] = {"id": holder_id, "tool": None, "pid": None}
    if holder_id == UNTRUSTED:
        return found
    try:
        data = json.loads(read_limited(os.path.join(claim.holders_dir, holder_id))[:HOLDER_BYTES])
    except (OSError, ValueError):
        return found
    if isinstance(data, dict):
        if isinstance(data.get("tool"), str):
            found["tool"] = data["tool"][:40]
        if isinstance(data.get("pid"), int) and not isinstance(data.get("pid"), bool):
            found["pid"] = data["pid"]
    return found


def _recovery_fields(claim: Claim) -> dict[str, object]:
    entry = load_entry(claim)
    if entry is None or entry.recovery is None:
        return {}
    return {"removed_at": entry.recovery.removed_at, "snapshot_ref": entry.recovery.snapshot_ref}


def _active_at(claim: Claim, data: dict[str, object]) -> str | None:
    """The latest of its claim, its holders, and git's own files (HEAD, index, reflog)."""
    stamps = [s for s in (data.get("claimed_at"), data.get("removed_at")) if isinstance(s, str)]
    paths = [claim.record_path, claim.holders_dir, claim.checkout]
    admin = _admin_dir(claim.checkout) if data["state"] == READY else None
    if admin:
        paths += [f"{admin}/HEAD", f"{admin}/index", f"{admin}/logs/HEAD"]
    newest = 0.0
    for path in paths:
        try:
            newest = max(newest, os.stat(path, follow_symlinks=False).st_mtime)
        except OSError:
            pass
    if newest:
        stamps.append(_utc(newest))
    return max(stamps) if stamps else None


def _admin_dir(checkout: str) -> str | None:
    try:
        text = read_limited(os.path.join(checkout, ".git")).decode("utf-8", "replace").strip()
    except (OSError, ValueError):
        return None
    if not text.startswith("gitdir: "):
        return None
    return os.path.join(checkout, text[len("gitdir: "):])


def _utc(timestamp: float) -> str:
    moment = dt.datetime.fromtimestamp(timestamp, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def detail(wt: Worktrees, bucket: str, name: str) -> dict[str, object]:
    """One worktree: changed files, commits since base, diff against base (its row, the
    page takes from the live list)."""
    for part in (bucket, name):
        if path_segment_problem(part) is not None:
            raise NotFound(f"no managed worktree named {name!r} in {bucket!r}")
    claim = wt.root.claim(bucket, name)
    entry = load_entry(claim)
    if entry is None:
        raise NotFound(f"no managed worktree named {name!r} in {bucket!r}")
    found: dict[str, object] = {"bucket": bucket, "name": name, "state": entry.state,
                                "files": [], "commits": [], "diff": "",
                                "diff_truncated": False, "problem": entry.problem}
    record = entry.record
    if entry.problem is not None or record is None or not record.base_commit:
        return found
    if entry.state == READY:
        checkout = validate_checkout(claim)
        git = housekeeping_git(checkout)
        found["files"] = [{"status": code, "path": path} for code, path in g.changed_files(git)]
        found["commits"] = _commits(git, record.base_commit, "HEAD")
        diff = _diff(git, checkout.admin_dir, record.base_commit)
        found["diff"] = diff[:DIFF_LIMIT]
        found["diff_truncated"] = len(diff) > DIFF_LIMIT
    elif entry.state == MISSING:
        from ..lifecycle.worktrees import repo_git_for

        repo_git = repo_git_for(claim, record, None)
        tip = g.branch_tip(repo_git, record.branch)
        if tip:
            found["commits"] = _commits(repo_git, record.base_commit, tip)
    return found


def _commits(git: g.Git, base: str, head: str) -> list[dict[str, str]]:
    keys = ("commit", "author", "date", "subject")
    return [dict(zip(keys, c, strict=False))
            for c in g.commits_between(git, base, head, COMMITS_SHOWN)]


def _diff(git: g.Git, admin_dir: str, base: str) -> str:
    """Tracked changes and untracked files, the latter through a copy of the index in
    which they are intent-to-add: the worktree's own index is never written."""
    untracked = g.untracked_files(git)
    if not untracked:
        return g.diff_against(git, base)
    with tempfile.TemporaryDirectory(prefix="vwt-board-") as scratch:
        index = os.path.join(scratch, "index")
        copy_index(os.path.join(admin_dir, "index"), index)
        try:
            g.intend_to_add(git, index, untracked)
            return g.diff_against(git, base, index)
        except VwtError:  # e.g. a split index that cannot be copied: tracked changes only
            return g.diff_against(git, base)
