"""Fixture repositories, worktrees and record.json files in the format of SPEC.md section 2."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.proc import BenchError
from benchmarks.sandbox import Sandbox

FILES_PER_DIR = 100
_EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
_IDENT = "Bench User <bench@example.com> 1735689600 +0000"


@dataclass(frozen=True)
class Repo:
    path: Path
    head: str
    bucket: str


@dataclass(frozen=True)
class Worktree:
    name: str
    path: Path


def _file_body(index: int, rng: random.Random) -> bytes:
    line = f"# file {index}: deterministic benchmark content, lorem ipsum dolor sit amet\n"
    return (line * rng.randint(2, 50)).encode()


def fast_import_stream(nfiles: int, top: str = "") -> bytes:
    """One commit on refs/heads/main holding nfiles files, FILES_PER_DIR per folder; the
    folders sit in `top` when given (`src/pkg0000/...`), else at the top level."""
    rng = random.Random(nfiles)
    parts = [
        b"commit refs/heads/main\n",
        f"author {_IDENT}\ncommitter {_IDENT}\n".encode(),
        b"data 8\nfixture\n",
    ]
    for i in range(nfiles):
        body = _file_body(i, rng)
        name = f"{top}pkg{i // FILES_PER_DIR:04d}/mod{i % FILES_PER_DIR:03d}.py"
        parts.append(f"M 100644 inline {name}\ndata {len(body)}\n".encode())
        parts.append(body + b"\n")
    return b"".join(parts)


def bucket_of(sb: Sandbox, repo: Path) -> str:
    """`<repo_root.name>-<sha256(common git dir)[:12]>`, as SPEC.md section 2 defines it."""
    top = Path(sb.git("rev-parse", "--show-toplevel", cwd=repo).strip()).resolve()
    common = sb.git("rev-parse", "--git-common-dir", cwd=repo).strip()
    common_dir = (repo / common).resolve()
    digest = hashlib.sha256(str(common_dir).encode()).hexdigest()[:12]
    return f"{top.name}-{digest}"


def make_repo(sb: Sandbox, path: Path, nfiles: int, top: str = "") -> Repo:
    """A repository with one commit of nfiles generated files, checked out in its main tree;
    `top` ("src/") puts all their folders in one top-level folder."""
    path.mkdir(parents=True)
    sb.git("init", "-q", "-b", "main", cwd=path)
    sb.git("fast-import", "--quiet", cwd=path, stdin=fast_import_stream(nfiles, top))
    sb.git("reset", "-q", "--hard", "main", cwd=path)
    head = sb.git("rev-parse", "HEAD", cwd=path).strip()
    return Repo(path, head, bucket_of(sb, path))


def add_worktree(sb: Sandbox, repo: Repo, name: str, path: Path) -> Worktree:
    sb.git("worktree", "add", "-q", "--no-track", "-b", name, str(path), repo.head, cwd=repo.path)
    return Worktree(name, path)


def vwt_new(sb: Sandbox, repo: Repo, name: str, *options: str) -> Worktree:
    """A worktree made as a user makes one: `vwt new NAME`, a real checkout and record.
    Whatever the caller then writes in it lands in the same second as the checkout, as
    an agent's first edits do, so git sees many of its index entries as racily clean."""
    result = sb.vwt(["new", name, "--no-fetch", "--json", *options], cwd=repo.path)
    try:
        path = Path(json.loads(result.stdout)["path"])
    except (ValueError, KeyError, TypeError) as exc:
        raise BenchError(f"vwt new {name} printed no path: {result.stdout[:200]!r}") from exc
    if not (path / ".git").is_file():
        raise BenchError(f"vwt new {name} left no checkout at {path}")
    return Worktree(name, path)


def claims_dir(vibe_home: Path, bucket: str) -> Path:
    return vibe_home / "worktrees" / ".claims" / bucket


def checkout_path(vibe_home: Path, bucket: str, name: str) -> Path:
    return vibe_home / "worktrees" / bucket / name


def timestamp(seconds: int) -> str:
    return (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_record(vibe_home: Path, repo: Repo, name: str, order: int) -> Path:
    """record.json for a worktree claimed `order` seconds after the fixture epoch."""
    folder = claims_dir(vibe_home, repo.bucket) / name
    folder.mkdir(parents=True, exist_ok=True)
    record = {
        "version": 1,
        "name": name,
        "branch": name,
        "repo_root": str(repo.path),
        "base_commit": repo.head,
        "branch_created": True,
        "claimed_at": timestamp(order),
        "session_dirs": [],
        "reap_requested": False,
        "moved_checkout_admin": None,
    }
    final = folder / "record.json"
    tmp = folder / ".record.json.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, final)
    return final


def managed_worktree(sb: Sandbox, repo: Repo, vibe_home: Path, name: str, order: int) -> Worktree:
    """A checkout at the tool's layout path plus its hand-written record."""
    wt = add_worktree(sb, repo, name, checkout_path(vibe_home, repo.bucket, name))
    write_record(vibe_home, repo, name, order)
    return wt


def forget_worktree(sb: Sandbox, repo: Repo, name: str, path: Path, claim: Path | None) -> None:
    """Undo one created worktree (checkout, admin entry, branch, claim folder); not timed."""
    shutil.rmtree(path, ignore_errors=True)
    if claim is not None:
        shutil.rmtree(claim, ignore_errors=True)
    sb.git("worktree", "prune", cwd=repo.path)
    sb.git("branch", "-q", "-D", name, cwd=repo.path)
