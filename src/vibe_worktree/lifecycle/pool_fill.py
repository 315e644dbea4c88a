"""Filling the warm pool: making ready entries, in the foreground (`vwt pool fill`) or in a
detached refill after `vwt new`, and what the last fill left behind: its log and, when it
failed, why.

An entry is made under the pool's fill lock: a detached checkout, the `.worktreeinclude`
copies, the post_create hooks one at a time (the checkout looked at after each), then its
ready marker, written last. A refill runs where nobody watches, so a fill's failure is kept
where `vwt pool` and `vwt doctor` look: `<root>/.pool/<bucket>/.last-error`, a small JSON
file written atomically by the fill that failed and removed by the next fill that succeeds.
It is in the pool's own folder, never in Vibe's buckets or claim folders. A refill's output
goes to `<home>/logs/worktree/<bucket>/pool-fill.log`.
"""

from __future__ import annotations

import os
import sys
import time

from ..core import git as g
from ..core.errors import VwtError
from ..core.files import write_atomically
from ..core.layout import Root, bucket_name, ensure_dir
from ..core.light import NamedTuple
from ..core.locks import try_flock
from ..core.records import utc_now, write_json_atomically
from .pool import (
    LOCK_REASON,
    QUEUE_LOCK,
    READY,
    REPO_FILE,
    FillLock,
    Warn,
    clean_up,
    configured_size,
    contents,
    fill_log,
    folder,
    note_failure,
    note_success,
    remove_entry,
    status_of,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .hooks import Ask
    from .pool import PoolStatus
    from .worktrees import Repo


def _quiet(_message: str) -> None:
    pass


# -- filling ----------------------------------------------------------------------------------
class FillOutcome(NamedTuple):
    made: int
    failure: str | None  # why an entry could not be made ready


def _start_point(home: str, cwd: str, fetch: bool, warn: Warn) -> tuple[g.Probe, str]:
    """The commit `new` would start a new branch from (§4), and the probe it came from."""
    from .create import Output, remote_default_commit

    probe = g.probe(cwd, [], None)
    commit = remote_default_commit(g.Git(cwd), probe, fetch, Output(warn)) or probe.head
    if commit is None:
        raise VwtError("the repository has no commits yet; commit something first")
    return probe, commit


def fill(root: Root, cwd: str, size: int | None = None, *, wait: bool = True,
         fetch: bool = True, ask: Ask | None = None, warn: Warn = _quiet,
         progress: Warn = _quiet, held: FillLock | None = None,
         log: str | None = None) -> FillOutcome:
    """Make ready entries until the pool holds `size` (default: the configured size).
    One filler per repository: with `wait` False, return at once when another is busy.
    `held`: the fill lock, already taken by the caller (released here). A failure is kept
    as the pool's last error (`log`: where a background filler's output goes) until a
    later fill succeeds."""
    info = g.discover(cwd)
    bucket = bucket_name(info.repo_root, info.common_dir)
    lock = held or FillLock(root, bucket)
    if held is None and not lock.acquire(wait):
        return FillOutcome(0, None)
    try:
        outcome = _fill_locked(root, info, bucket, size, fetch, ask, warn, progress)
    except (VwtError, OSError) as exc:
        note_failure(root, bucket, describe(exc), log)
        raise
    finally:
        lock.release()
    if outcome.failure is None:
        note_success(root, bucket)
    else:
        note_failure(root, bucket, outcome.failure, log)
    return outcome


def fill_now(repo: Repo, size: int | None, ask: Ask | None, fetch: bool, warn: Warn,
             progress: Warn) -> PoolStatus:
    """`vwt pool fill`: fill the pool in the foreground (after a background filler, if one
    is busy); its status after. A VwtError names the hook that failed to make an entry."""
    outcome = fill(repo.root, repo.info.repo_root, size, wait=True, fetch=fetch, ask=ask,
                   warn=warn, progress=progress)
    if outcome.failure is not None:
        raise VwtError(f"a pool entry could not be made ready: {outcome.failure}")
    return status_of(repo.root, repo.bucket, repo.info.repo_root)


def _fill_locked(root: Root, info: g.RepoInfo, bucket: str, size: int | None, fetch: bool,
                 ask: Ask | None, warn: Warn, progress: Warn) -> FillOutcome:
    _write_repo_file(root, bucket, info.repo_root)
    clean_up(root, bucket, info.common_dir, warn)
    want = configured_size(root.home, info.repo_root) if size is None else size
    made = 0
    while len(contents(root, bucket).ready) < want:
        progress(f"vwt: pool: making entry {len(contents(root, bucket).ready) + 1} of "
                 f"{want}…")
        _probe, start = _start_point(root.home, info.repo_root, fetch and made == 0, warn)
        failure = _make_entry(root, bucket, info, start, ask, warn)
        if failure is not None:
            return FillOutcome(made, failure)
        made += 1
    return FillOutcome(made, None)


def _write_repo_file(root: Root, bucket: str, repo_root: str) -> None:
    path = f"{folder(root, bucket)}/{REPO_FILE}"
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == repo_root:
                return
    except OSError:
        pass
    write_atomically(path, repo_root.encode("utf-8"), 0o644)


def _make_entry(root: Root, bucket: str, info: g.RepoInfo, start: str, ask: Ask | None,
                warn: Warn) -> str | None:
    """One entry, made under the fill lock: checkout, copies, hooks, then the marker.
    Returns why it could not be made ready (the entry is then removed)."""
    from .include import copy_included_files
    from .sparse import configured, populate

    entry_id = os.urandom(8).hex()
    path = f"{folder(root, bucket)}/{entry_id}"
    repo_git = g.Git(info.repo_root)
    sparse = configured(repo_git, info.toplevel, start)
    args = ["worktree", "add", "--quiet", "--detach", "--lock", "--reason", LOCK_REASON]
    if sparse:
        args.append("--no-checkout")
    from .create import CHECKOUT_WORKERS

    config = ["-c", f"checkout.workers={CHECKOUT_WORKERS}",
              "-c", f"checkout.thresholdForParallelism={g.PARALLEL_CHECKOUT_THRESHOLD}"]
    g.Git(info.repo_root, housekeeping=False).run(*config, *args, path, start)
    checked_out = time.time()
    if sparse:
        populate(path, sparse)
    copy_included_files(info.repo_root, path, root.home, warn)
    included = _fingerprint_copies(info.repo_root, path, root.home, warn)
    results: list[dict[str, object]] = []
    failure = _left_changed(path, None)
    if failure is None:
        results, failure = _run_hooks(root.home, bucket, entry_id, path, info.repo_root,
                                      start, bool(sparse), ask, warn)
    if failure is not None:
        remove_entry(root, bucket, info.common_dir, entry_id, warn)
        return failure
    _settle_index(path, checked_out)
    from ..core.disk import tree_bytes

    write_json_atomically(f"{path}{READY}", {
        "version": 1, "base": start, "sparse": list(sparse), "created_at": utc_now(),
        "repo_root": info.repo_root, "hooks": results, "bytes": tree_bytes(path),
        "include": included,
    })
    return None


def _fingerprint_copies(repo_root: str, path: str, home: str, warn: Warn
                        ) -> dict[str, list[object]]:
    """What the `.worktreeinclude` files were when copied (right after the copy, before any
    hook ran), so that the take copies again only those that changed since (SPEC §15)."""
    from .include_again import fingerprints, selected_files

    try:
        return fingerprints(path, selected_files(repo_root, home))
    except VwtError as exc:
        warn(f"the .worktreeinclude copies' fingerprints were not kept ({exc.message}); the "
             "take compares them with the main checkout's files")
        return {}


def _run_hooks(home: str, bucket: str, entry_id: str, path: str, repo_root: str, base: str,
               sparse: bool, ask: Ask | None, warn: Warn
               ) -> tuple[list[dict[str, object]], str | None]:
    """The post_create hooks, all in the foreground (the filler is the background), with
    `VWT_POOL=1` and no name, branch or port yet. One at a time, the checkout looked at
    after each, so a failure names the hook and what it left changed; the first failure
    ends the entry."""
    from .setup_state import any_hooks_file

    if not (sparse or any_hooks_file(home, path, repo_root)):
        return [], None
    from . import hook_runner as run
    from . import hooks as h
    from .relocate import DEFAULT_PATTERNS
    from .settings import HooksFileError

    try:
        found = h.load_all(home, path, base if sparse else None, repo_root, warn)
    except HooksFileError as exc:
        return [], exc.message
    found = [hook._replace(background=False) for hook in found if hook.type == h.POST_CREATE]
    ctx = run.pool_context(entry_id, path, bucket, repo_root, base)
    runner = run.Runner(home, warn, ask)
    done: list[dict[str, object]] = []
    for hook in found:
        [result] = run.run_hooks(runner, h.POST_CREATE, [hook], ctx, path)
        if result.status == h.SKIPPED_UNAPPROVED:
            done.append(dict(result.to_json(), key=hook.key))
            continue
        relocate = list(DEFAULT_PATTERNS if hook.relocate is None else hook.relocate)
        how = None
        if result.failed:
            how = "timed out" if result.status == h.TIMED_OUT else f"exited {result.exit_code}"
        failure = _left_changed(path, hook.name, how)
        if failure is not None or how is not None:
            return [], failure or f"post_create hook {hook.name} {how}"
        done.append(dict(result.to_json(), key=hook.key, relocate=relocate))
    return done, None


def _left_changed(path: str, hook: str | None, how: str | None = None) -> str | None:
    """Why the entry cannot be kept when the checkout has changes now: who made them
    (`hook`, or the checkout itself before any hook ran) and the first paths, as `git
    status` shows them. None when it is clean."""
    changed = g.changed_files(g.Git(path))
    if not changed:
        return None
    shown = ", ".join(f"{code.strip()} {name}" for code, name in changed[:5])
    if len(changed) > 5:
        shown += f" and {len(changed) - 5} more"
    if hook is None:
        return (f"the checkout had changes before any post_create hook ran ({shown}): a "
                "post-checkout hook of the repository, or a .worktreeinclude copy of a file "
                "git does not ignore; a pool entry must be clean, so it was not kept")
    did = f"{how} and left" if how else "left"
    return (f"post_create hook {hook} {did} changes git sees ({shown}); a pool entry must be "
            "clean (a hook may write only files git ignores), so it was not kept")


def _settle_index(path: str, checked_out: float) -> None:
    """Rewrite the index once its files are older than it: a fresh checkout's entries are
    "racily clean" (written in the same second as the index), so every later status would
    read all their contents again. Settled here, `new`'s check of the entry and its
    checkout of the branch only compare file stats."""
    time.sleep(max(0.0, checked_out + 1.1 - time.time()))
    g.Git(path).run("update-index", "-q", "--refresh", check=False)


# -- the background refill --------------------------------------------------------------------
def spawn_refill(home: str, repo_root: str, bucket: str) -> None:
    """Start a detached filler (its own session, none of our standard streams) and return at
    once. At most one runs and one waits per repository: the waiting place (`.fill-queue`)
    is taken here, before `new` returns, and handed to the child with its descriptor; when
    it is taken already, the waiting filler will see this take, and none is started."""
    import subprocess

    root = Root.at(home)
    log = fill_log(home, bucket)
    try:
        ensure_dir(folder(root, bucket), root.path)
        queue = os.open(f"{folder(root, bucket)}/{QUEUE_LOCK}",
                        os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except (OSError, VwtError):
        return  # a refill is a convenience: `new` has already succeeded
    try:
        if not try_flock(queue):
            return
        os.makedirs(os.path.dirname(log), exist_ok=True)
        with open(log, "ab") as out:
            subprocess.Popen(
                [sys.executable, "-m", "vibe_worktree.lifecycle.pool_fill", home, repo_root,
                 str(queue)],
                cwd=repo_root, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                start_new_session=True, close_fds=True, pass_fds=(queue,),
            )
    except OSError:
        pass
    finally:
        os.close(queue)  # the child's copy keeps the lock


def _say(message: str) -> None:
    print(f"{utc_now()} {message}", flush=True)


def _background_fill(root: Root, bucket: str, repo_root: str, queue: int) -> int:
    """The detached filler: holding the waiting place (`queue`, inherited locked), wait for
    the fill lock, let the waiting place go, then fill."""
    lock = FillLock(root, bucket)
    try:
        lock.acquire(wait=True)
    finally:
        os.close(queue)
    outcome = fill(root, repo_root, warn=_say, progress=_say, held=lock,
                        log=fill_log(root.home, bucket))
    if outcome.failure:
        _say(f"vwt: pool: {outcome.failure}")
        return 1
    return 0


def main(argv: list[str]) -> int:
    home, repo_root, queue = argv[0], argv[1], int(argv[2])
    root = Root.at(home)
    try:
        info = g.discover(repo_root)
    except VwtError as exc:  # no pool folder to keep it in: the log says it
        _say(f"vwt: pool: {exc.message}")
        return 1
    bucket = bucket_name(info.repo_root, info.common_dir)
    try:
        return _background_fill(root, bucket, repo_root, queue)
    except (VwtError, OSError) as exc:
        message = describe(exc)
        _say(f"vwt: pool: {message}")
        note_failure(root, bucket, message, fill_log(home, bucket))
        return 1


def describe(exc: VwtError | OSError) -> str:
    """One line for an error, as the command line words it."""
    if isinstance(exc, VwtError):
        return exc.message
    return f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")


if __name__ == "__main__":  # the detached filler
    sys.exit(main(sys.argv[1:]))
