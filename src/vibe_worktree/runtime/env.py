"""`vwt port` and `vwt env`: a worktree's ports and environment as documents (SPEC §17).

Both only read (a home that cannot be written serves them too), and `vwt env` is called often
by scripts and shells: it reads the worktree's record, the lease table and its checkout's
`.vibe/worktree.toml`, and imports nothing it does not need (no git process either, for the
usual layouts).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..core.errors import NotFound, VwtError
from ..core.layout import Claim, Root
from ..core.light import NamedTuple
from ..core.names import validate_name
from ..core.records import CorruptRecord, Record, read_record

Warn = Callable[[str], None]


class PortDocument(NamedTuple):
    """`vwt port --json`: the first port of the worktree's lease, and all of them."""

    name: str
    bucket: str
    ports: tuple[int, ...]
    leased: bool  # False: no lease yet, these are its hash block (docs/runtime.md)

    @property
    def port(self) -> int:
        return self.ports[0]

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "bucket": self.bucket, "port": self.port,
                "ports": list(self.ports)}


class EnvDocument(NamedTuple):
    """`vwt env --json`: the worktree's environment, in the order it is set."""

    name: str
    bucket: str
    variables: dict[str, str]

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "bucket": self.bucket, "env": self.variables}


def named(root: Root, cwd: str, name: str | None) -> Claim:
    """NAME in the repository containing `cwd`, or without NAME the managed worktree that
    contains `cwd`."""
    if name is None:
        claim = containing(root, cwd)
        if claim is None:
            raise VwtError(f"{cwd} is not inside a managed worktree; give its NAME (vwt env "
                           "NAME), or run this inside the worktree")
        return claim
    validate_name(name, as_branch=False)
    from ..core.repo_dirs import discover_without_git

    found = discover_without_git(cwd)  # no git process, and no git runner to import
    if found is None:  # a layout the `.git` files do not tell: git does
        from ..lifecycle.worktrees import open_repo

        return open_repo(root, cwd).claim(name)
    from ..core.layout import bucket_name

    return root.claim(bucket_name(found.repo_root, found.common_dir), name)


def containing(root: Root, cwd: str) -> Claim | None:
    """The claim whose checkout holds `cwd` (`<root>/<bucket>/<name>/...`), if any."""
    here = os.path.realpath(cwd)
    if not here.startswith(f"{root.path}/"):
        return None
    parts = here[len(root.path) + 1:].split("/")
    if len(parts) < 2 or parts[0].startswith("."):
        return None
    claim = root.claim(parts[0], parts[1])
    return claim if os.path.lexists(claim.record_path) else None


def _record(claim: Claim) -> Record:
    """The worktree's record; NotFound, or an error saying why it cannot be used."""
    try:
        return read_record(claim.record_path, claim.name)
    except (FileNotFoundError, NotADirectoryError):
        if os.path.lexists(claim.recovery_path):
            raise NotFound(f"{claim.name} was removed; vwt restore {claim.name} brings it "
                           "back") from None
        raise NotFound(f"no worktree {claim.name!r} in this repository; see vwt list"
                       ) from None
    except (CorruptRecord, OSError) as exc:
        raise VwtError(f"{claim.record_path} is unreadable ({exc}); see vwt doctor") from None


def port_document(claim: Claim) -> PortDocument:
    """The worktree's ports; a name that is no worktree (yet) gets its hash block, the one
    its lease would try first."""
    from ..lifecycle.leasing import ports_of

    try:
        record: Record | None = read_record(claim.record_path, claim.name)
    except (OSError, CorruptRecord):
        record = None
    found = ports_of(claim.root, claim.bucket, claim.name,
                     None if record is None else record.ports, claim.checkout)
    return PortDocument(claim.name, claim.bucket, found.ports, found.leased)


def env_document(claim: Claim, warn: Warn) -> EnvDocument:
    """The worktree's environment (`lifecycle.environment.of_worktree`)."""
    from ..lifecycle.environment import Worktree, of_worktree
    from ..lifecycle.settings import HooksFileError

    record = _record(claim)
    worktree = Worktree(claim.bucket, claim.name, record.branch, claim.checkout,
                        record.repo_root, record.ports, bool(record.sparse))
    try:
        variables = of_worktree(claim.root.home, worktree, warn)
    except HooksFileError as exc:  # its .vibe/worktree.toml is not TOML
        raise VwtError(exc.message.removesuffix(" or pass --no-hooks")) from None
    return EnvDocument(claim.name, claim.bucket, variables)
