"""The Python API: every operation of the CLI, returning typed results.

    from vibe_worktree import Worktrees

    wt = Worktrees(cwd="/path/to/repo")          # home: $VIBE_HOME or ~/.vibe
    created = wt.create(prompt="fix the login bug")
    with wt.hold(created.name):                  # retention keeps away meanwhile
        ...                                      # work in created.path
    wt.remove(created.name, confirm_dirty=True)  # snapshot first if anything would be lost
"""

from __future__ import annotations

import builtins
import os
import sys
from collections.abc import Callable, Sequence

from .core.errors import NotFound, ValidationFailed
from .core.layout import Claim, Root, resolve_home
from .lifecycle import listing
from .lifecycle.listing import Listed, WorktreeStatus
from .lifecycle.worktrees import (
    BROKEN,
    MISSING,
    ORPHANED,
    READY,
    SNAPSHOT,
    Here,
    Repo,
    require_entry,
    require_ready,
    require_trusted,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .core.host import Host
    from .core.locks import Holder
    from .health.doctor import Report as DoctorReport
    from .health.orphans import Repaired
    from .landing.collisions import ConflictsResult
    from .landing.land import LandReport, LandResult
    from .landing.merge import MergeResult
    from .landing.sync import SyncResult
    from .lifecycle import create as _create
    from .lifecycle.adopt import AdoptResult
    from .lifecycle.create import Created
    from .lifecycle.foreign import Foreign
    from .lifecycle.hooks import Ask
    from .lifecycle.hooks import Listed as ListedHook
    from .lifecycle.pool import PoolStatus
    from .lifecycle.prune import PruneResult
    from .lifecycle.remove import Confirm, Removal, Snapshot
    from .runtime.env import EnvDocument, PortDocument
    from .runtime.ps import PsReport

Warn = Callable[[str], None]


def warn_to_stderr(message: str) -> None:
    print(f"vwt: warning: {message}", file=sys.stderr)


class Worktrees:
    """All operations on the managed worktrees under one home."""

    def __init__(self, home: str | None = None, cwd: str | None = None,
                 warn: Warn = warn_to_stderr, progress: bool = False) -> None:
        """`progress`: let git show its own progress (fetch, checkout) on stderr."""
        self.root = Root.at(resolve_home(home))
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.warn = warn
        self.progress = progress
        self._here = Here(self.root, self.cwd)

    @property
    def repo(self) -> Repo:
        """The repository containing `cwd` (NotARepository otherwise)."""
        return self._here.repo

    def claim(self, name: str) -> Claim:
        return self.repo.claim(name)

    # -- create ---------------------------------------------------------------------------
    def create(self, name: str | None = None, *, prompt: str | None = None,
               branch: str | None = None, from_ref: str | None = None,
               fetch: bool = True, hooks: bool = True, ask: Ask | None = None,
               sparse: Sequence[str] | None = None, pr: int | None = None,
               carry: bool = False, move: bool = False, host: Host | None = None) -> Created:
        """Create a worktree (or reuse NAME after validating it).

        `hooks`: run the post_create hooks of a new worktree. `ask`: called with an
        unapproved project hook, True runs and approves it; without it such a hook is
        skipped with a warning. `sparse`: folders of a cone-mode sparse checkout (None:
        `sparse` of the start point's `.vibe/worktree.toml`, if any). `pr`: start from pull
        request N of the remote, in branch `pr-N` (NAME defaults to `pr-N`). `carry`: copy
        the uncommitted work of the checkout containing `cwd` into the new worktree (a new
        branch from that checkout's HEAD, or `from_ref` when the work applies to it cleanly);
        `move`: the same, then take that work out of the source (saved first to
        `refs/vibe/carried/NAME`). See `Created.carried`. `host`: the agent process this
        worktree is made for; its post_create hooks are stopped when it dies (a foreground
        one then raises `hooks.AgentGone`, the worktree left as made so far).
        """
        from .lifecycle import new  # only creating pays for it

        return new.create(self.root, self.cwd, self._output, new.Request(
            name, prompt, branch, from_ref, fetch, hooks, ask, sparse, pr, carry, move, host))

    def restore(self, name: str, *, hooks: bool = True, ask: Ask | None = None) -> Created:
        from .lifecycle import new

        return new.restore(self.repo, name, self._output, hooks, ask)

    # -- hooks -----------------------------------------------------------------------------
    def hooks(self, *, warn: bool = True) -> list[ListedHook]:
        """The user's hooks, the project hooks of the checkout containing `cwd`, and those
        imported from the main checkout's setup file for another tool (`warn`: say on
        stderr when that file is malformed)."""
        from .lifecycle.hooks import listing

        return listing(self.root.home, self.repo.bucket, self.repo.info.toplevel,
                       self.repo.info.repo_root, self.warn if warn else None)

    def approve_hooks(self, names: Sequence[str] = (), *, all_hooks: bool = False,
                      approve: bool = True) -> list[ListedHook]:
        """Approve (or with `approve=False` revoke) project hooks by name, or all of them
        (those imported from another tool's setup file included)."""
        from .lifecycle.hooks import approve_named

        approve_named(self.root.home, self.repo.bucket, self.hooks(), names, all_hooks, approve)
        return self.hooks(warn=False)  # a malformed file was named once already

    @property
    def _output(self) -> _create.Output:
        from .lifecycle.create import Output

        return Output(self.warn, self.progress)

    # -- look ------------------------------------------------------------------------------
    def list(self, *, all_repos: bool = False, with_status: bool = True,
             with_size: bool = False) -> list[Listed]:
        """`with_size`: also the bytes each checkout's own files take (`size`), as `du -s`
        counts them, measured several at a time."""
        from .sessions.activity import with_activity

        buckets = self.root.buckets() if all_repos else [self.repo.bucket]
        rows = with_activity(self.root.home, listing.rows(self.root, buckets, with_status))
        return listing.with_sizes(rows) if with_size else rows

    def path(self, name: str) -> str:
        claim = self.claim(name)
        entry = require_entry(claim)
        require_trusted(entry)
        return claim.checkout

    def status(self, name: str) -> WorktreeStatus:
        from .sessions.activity import current

        claim = self.claim(name)
        return listing.status_of(claim)._replace(activity=current(self.root.home, claim))

    def conflicts(self, name: str | None = None, *, all_repos: bool = False,
                  path: str | None = None) -> ConflictsResult:
        """Where the ready worktrees will conflict (SPEC §13): against their target branch
        and with each other. Changes nothing and holds nothing, so it is safe while their
        sessions work. NAME: its own collisions; `path` (a file or folder relative to the
        top level): only who changes it; `all_repos`: every repository."""
        from .landing.collisions import conflicts

        return conflicts(self._here, name, all_repos, path)

    def ps(self, name: str | None = None, *, all_repos: bool = False) -> PsReport:
        """What runs inside each managed worktree of this repository (every repository with
        `all_repos`; NAME's alone when given), and who listens on each port of its lease
        (SPEC §17): `result.mismatches` are lease ports served from another folder.
        Changes nothing."""
        from .runtime.ps import ps

        return ps(self._here, name, all_repos)

    # -- hold ------------------------------------------------------------------------------
    def hold(self, name: str, holder_id: str | None = None) -> Holder:
        """Hold NAME for a live session; use as a context manager or call `.release()`.

        Taken under the prune lock, so retention cannot slip in between the lookup
        and the hold.
        """
        from .lifecycle.worktrees import hold

        return hold(self.repo, name, holder_id)

    def run(self, name: str, command: Sequence[str], extra_env: dict[str, str] | None = None
            ) -> int:
        """Run `command` inside NAME while holding it; return its exit status."""
        from .runtime.run import run_held

        return run_held(self._here, name, command, extra_env, self.warn)

    def port(self, name: str) -> PortDocument:
        """The ports of NAME's lease (SPEC §17); a name without a lease (a worktree Vibe
        made, or none yet) gets its hash block, the one its lease would try first."""
        from .core.names import validate_name
        from .runtime.env import port_document

        return port_document(self.claim(validate_name(name, as_branch=False)))

    def env(self, name: str | None = None) -> EnvDocument:
        """NAME's environment, as its hooks, `run` and `shell` get it (SPEC §17); without
        NAME, of the managed worktree containing `cwd`."""
        from .runtime.env import env_document, named

        return env_document(named(self.root, self.cwd, name), self.warn)

    # -- clean up --------------------------------------------------------------------------
    def remove(self, name: str, *, confirm_dirty: bool | Confirm = False,
               delete_branch: bool | None = None, confirm_branch: Confirm | None = None,
               own_holders: Sequence[str] = (), hooks: bool = True,
               ask_hook: Ask | None = None, stop: bool = False) -> Removal:
        """Remove NAME safely. Dirty work needs `confirm_dirty` (and is snapshotted first).

        `own_holders`: the caller's own holder ids, which do not count as a live session
        (`VWT_HOLDER_ID`, set by `vwt run`, is always among them). `hooks`: run the
        pre_remove hooks first (a failing one stops the removal: outcome hook_failed).
        Processes running inside it (this one and its ancestors excepted) keep it
        (`kept_in_use`, `result.processes`); `stop`: stop them first (SIGTERM, up to 5 s,
        SIGKILL; `result.stopped`).
        """
        from .core.locks import own_holders as own
        from .lifecycle import remove as _remove
        from .lifecycle.worktrees import load_entry

        claim = self.claim(name)
        return _remove.remove_worktree(
            load_entry(claim), claim, confirm_dirty=_remove.asking(confirm_dirty),
            delete_branch=delete_branch, confirm_branch=confirm_branch or _remove.never,
            ignore_holders=own(own_holders),
            pre_remove=_remove.pre_remove_hooks(self.root.home, self.warn, ask_hook)
            if hooks else None,
            stop_processes=stop, warn=self.warn,
        )

    def snapshot(self, name: str) -> Snapshot:
        from .lifecycle.remove import snapshot_held

        return snapshot_held(require_ready(self.claim(name), "there is no checkout to snapshot"))

    # -- land ------------------------------------------------------------------------------
    def merge(self, name: str, *, into: str | None = None, mode: str = "squash",
              message: str | None = None, commit: bool = False, keep: bool = False,
              fetch: bool = True, hooks: bool = True,
              own_holders: Sequence[str] = (), ask: Ask | None = None) -> MergeResult:
        """Land NAME's commits on the target branch (SPEC §8), then remove it unless `keep`.

        Refusals and failures that change nothing are outcomes (`result.exit_code`), not
        exceptions. `own_holders` as for `remove`. `hooks`: run the pre_merge, pre_remove
        and post_merge hooks (`ask` as for `create`).
        """
        from .core.locks import own_holders as own
        from .landing.merge import Request, merge_hooks
        from .landing.merge import merge as _merge

        claim = self.claim(name)
        run_hooks = merge_hooks(self.root.home, self.warn, ask, claim.checkout,
                                self.repo.info.repo_root) if hooks else None
        return _merge(claim, Request(name, into, mode, message, commit, keep, fetch,
                                     own(own_holders), run_hooks), self.warn)

    def land(self, names: Sequence[str] = (), *, ready: bool = False, into: str | None = None,
             gate: str | None = None, mode: str = "squash", keep: bool = False,
             wait: bool = True, dry_run: bool = False, hooks: bool = True,
             own_holders: Sequence[str] = (), say: Warn | None = None,
             done: Callable[[LandResult], None] | None = None) -> LandReport:
        """Land worktrees through the local merge queue (SPEC §18): each in turn rebased onto
        the target's tip, checked by `gate` (else the approved `[land] gate`), landed as
        `merge` lands only while the target is still the commit it was gated on, then
        removed unless `keep`. `names` default to the worktree containing `cwd`; `ready`:
        every worktree with work to land. `wait` False: `busy` at once when another land has
        the turn. `done` is told each result as soon as it is known; `say` (else this API's
        warn) says whose turn a waiting land waits for. `own_holders` as for `remove`."""
        from .landing import land as _land

        request = _land.Request(tuple(names), ready, into, gate, keep, wait, dry_run, mode,
                                frozenset(own_holders), hooks)
        out = _land.Output(self.warn, say or self.warn, done or (lambda _result: None))
        return _land.land(self.repo, request, out)

    def merge_target(self, into: str | None = None) -> str:
        """The short name of the branch `merge` would land NAME on (SPEC §8)."""
        from .core.target import require

        return require(self.repo.git, into).branch

    def sync(self, name: str, *, onto: str | None = None, fetch: bool = True,
             stop_on_conflict: bool = False) -> SyncResult:
        """Rebase NAME's own commits onto the target branch inside its checkout.

        A conflict changes nothing (outcome `conflict`), or with `stop_on_conflict` leaves
        the rebase stopped in the checkout (`conflict_stopped`) for `sync_continue` or
        `sync_abort`."""
        from .landing.sync import sync as _sync

        return _sync(self.claim(name), onto, fetch, self.warn, stop_on_conflict)

    def sync_continue(self, name: str) -> SyncResult:
        """Go on with NAME's stopped sync once its conflicts are resolved and staged, as
        `git rebase --continue` does: `synced`, or `conflict_stopped` at the next one."""
        from .landing.sync import CONTINUE
        from .landing.sync import sync as _sync

        return _sync(self.claim(name), None, False, self.warn, action=CONTINUE)

    def sync_abort(self, name: str) -> SyncResult:
        """Undo NAME's stopped sync: branch, files and record as they were before it
        (outcome `aborted`)."""
        from .landing.sync import ABORT
        from .landing.sync import sync as _sync

        return _sync(self.claim(name), None, False, self.warn, action=ABORT)

    def prune(self, keep: int | None = None, dry_run: bool = False,
              merged: bool = False, max_size: int | str | None = None) -> PruneResult:
        """Retention; `merged` also removes clean worktrees whose commits have landed;
        `max_size` (bytes, or `"20G"`; default `max_size` of config.toml) then removes pool
        entries and the oldest unheld worktrees until all of them take at most that."""
        from .lifecycle.prune import prune

        return prune(self.root, keep, dry_run, self.warn, merged, max_size)

    # -- agent sessions ----------------------------------------------------------------------
    def hold_for_session(self, name: str, session: str, host: Host) -> str | None:
        """Hold NAME until the agent process `host` dies or `session` ends (a detached
        watcher keeps the hold); the holder id, or None when this session holds it already."""
        from .sessions.holds import hold_for_session

        return hold_for_session(self.claim(name), session, host,
                                lambda holder_id: self.hold(name, holder_id))

    def release_session(self, name: str, session: str) -> builtins.list[str]:
        """Let go of NAME's holds of `session`; the holder ids that went."""
        from .sessions.holds import release_session

        return release_session(self.claim(name), session)

    def end_session(self, session: str) -> int:
        """The session ended: its activity is forgotten and every hold it has, in every
        repository, let go. How many holds went."""
        from .sessions import activity, holds

        activity.clear(self.root.home, session)
        return holds.release_everywhere(self.root, session)

    def set_activity(self, name: str, state: str, *, agent: str = "unknown",
                     session: str = "") -> None:
        """What the agent working in NAME is doing (working, waiting, idle), this process
        being the agent: shown until it exits, or 6 hours without a new mark."""
        from .core.host import find_host
        from .sessions import activity

        activity.set_for(self.root.home, self.claim(name), state, agent, session,
                         find_host(os.getpid()))

    def clear_activity(self, name: str) -> None:
        """Forget what the agent working in NAME was doing."""
        from .sessions import activity

        activity.forget(self.root.home, self.claim(name))

    # -- other tools' worktrees --------------------------------------------------------------
    def foreign(self, *, all_repos: bool = False) -> Sequence[Foreign]:
        """The git worktrees other tools made (Claude Code, Codex, Cursor, `git worktree
        add`): not managed, the main working tree excepted; of every repository that has a
        bucket with `all_repos`. Changes nothing."""
        from .lifecycle.foreign import foreign_of

        return foreign_of(self._here, all_repos)

    def adopt(self, paths: Sequence[str] = (), *, all_foreign: bool = False) -> AdoptResult:
        """Move each worktree at `paths` (relative to `cwd`), or with `all_foreign` each one
        `foreign()` lists, under management; `result.refused` says which were not, and why
        (nothing of those changed)."""
        from .lifecycle.adopt import adopt

        return adopt(self._here, paths, all_foreign)

    # -- pool ------------------------------------------------------------------------------
    def pool_status(self, *, all_repos: bool = False) -> Sequence[PoolStatus]:
        """The warm pool of this repository (of every repository that has one with
        `all_repos`): configured size, ready and filling entries, their base commit."""
        from .lifecycle.pool import statuses

        return statuses(self._here, all_repos)

    def pool_fill(self, size: int | None = None, *, ask: Ask | None = None,
                  fetch: bool = True, progress: Warn | None = None) -> PoolStatus:
        """Fill this repository's pool now, in the foreground, up to `size` (default: the
        configured size); waits for a background filler first. A VwtError names the hook
        that failed when an entry could not be made ready."""
        from .lifecycle.pool_fill import fill_now

        return fill_now(self.repo, size, ask, fetch, self.warn, progress or (lambda _m: None))

    def pool_drain(self, *, all_repos: bool = False) -> Sequence[PoolStatus]:
        """Empty the pool (every repository's with `all_repos`); an entry with changes in it
        is snapshotted to `refs/vibe/pool/<id>` first."""
        from .lifecycle import pool

        return pool.drain_pools(self.root, None if all_repos else self.repo, self.warn)

    # -- health ----------------------------------------------------------------------------
    def doctor(self) -> DoctorReport:
        """Every problem of the home (changes nothing on disk)."""
        from .health.doctor import check

        return check(self.root, self.cwd)

    def archive_orphans(self) -> Sequence[Repaired]:
        """Archive the checkouts of vanished repositories into `<root>/.orphans`."""
        from .health.orphans import archive_orphans

        return archive_orphans(self.root, self.cwd)

    def relocate(self) -> Sequence[Repaired]:
        """Inside a moved repository: bring its worktrees into its current bucket."""
        from .health.orphans import relocate

        return relocate(self.root, self.cwd)


__all__ = [
    "BROKEN", "MISSING", "ORPHANED", "READY", "SNAPSHOT", "Created", "Listed", "NotFound",
    "ValidationFailed", "WorktreeStatus", "Worktrees",
]
