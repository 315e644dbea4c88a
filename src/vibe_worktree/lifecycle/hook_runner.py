"""Running lifecycle hooks (what they are and where they come from: `hooks.py`).

A foreground hook runs in its own process group with its timeout (`run_foreground`), or,
run for an agent, under the hook supervisor, which stops it when the agent dies
(`run_tied`); a background one is handed to a detached supervisor that holds the worktree
until it ends (`_start_background`). The commands' entry points come last: the setup of a
new worktree, and the hooks of a removal and of a merge.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence

from ..core.errors import VwtError
from ..core.layout import Claim
from ..core.light import NamedTuple
from ..core.records import utc_now
from . import setup_state
from .hooks import (
    FAILED,
    OK,
    POOLED,
    POST_CREATE,
    POST_MERGE,
    PRE_MERGE,
    PRE_REMOVE,
    PROJECT,
    SKIPPED_UNAPPROVED,
    STARTED,
    TIMED_OUT,
    USER,
    AgentGone,
    Ask,
    Hook,
    HookResult,
    Warn,
    change_approvals,
    is_approved,
    load_all,
)
from .settings import HooksFileError, approved_keys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import Any

    from ..core.host import Host

class Context(NamedTuple):
    """The worktree a hook runs for, and its environment (`environment.py`, SPEC §17)."""

    name: str
    branch: str
    path: str
    bucket: str
    repo_root: str
    base_commit: str
    # the worktree's own variables (VWT_*, PORT, ..., its [env] table's), made when the
    # first hook runs: a command that runs none reads no table and warns of none
    variables: Callable[[], Mapping[str, str]]
    into: str | None = None
    pool: bool = False  # run to make a pool entry: no name, branch or port yet

    def env(self, hook: Hook) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.variables())
        env.update(VWT_HOOK=hook.type, VWT_HOOK_NAME=hook.name,
                   VWT_BASE_COMMIT=self.base_commit)
        if self.into is not None:
            env["VWT_INTO"] = self.into
        if self.pool:
            env["VWT_POOL"] = "1"
        if hook.source not in (USER, PROJECT):  # imported: its tool's variables too
            from .setup_files import tool_environment

            env.update(tool_environment(hook.source, path=self.path, name=self.name,
                                        repo_root=self.repo_root, port=env["VWT_PORT"]))
        return env



class Runner(NamedTuple):
    """How hooks run for one command: where to ask, where to warn, which home, and the
    agent process they run for (an agent's hook session), whose death stops a background
    hook: none of our processes outlives the agent (SPEC §14)."""

    home: str
    warn: Warn
    ask: Ask | None = None  # None: no terminal, unapproved project hooks are skipped
    host: Host | None = None


Reuse = Callable[[Hook], "HookResult | None"]  # a result that stands in for running it
Settled = Callable[[Hook, "HookResult"], None]


def run_hooks(runner: Runner, kind: str, hooks: Sequence[Hook], ctx: Context, cwd: str,
              claim: Claim | None = None, stop_on_failure: bool = False,
              reuse: Reuse | None = None, settled: Settled | None = None
              ) -> list[HookResult]:
    """Run the hooks of `kind` in order. `claim`: hold the worktree while each one runs
    (a background one holds it until it ends). `reuse`: the result a hook already had
    (a pool entry's), so it need not run again; None runs it. `settled`: told each hook's
    result as soon as it is known."""
    wanted = [h for h in hooks if h.type == kind]
    if not wanted:
        return []
    reused = {h.name: r for h in wanted if reuse is not None and (r := reuse(h)) is not None}
    wanted_to_run = [h for h in wanted if h.name not in reused]
    keys = approved_keys(runner.home, ctx.bucket) \
        if any(h.source != USER for h in wanted_to_run) else set()
    results = []
    for hook in wanted:
        result = reused.get(hook.name) or _run_one(runner, hook, ctx, cwd, claim, keys)
        results.append(result)
        if settled is not None:
            settled(hook, result)
        if result.failed and stop_on_failure:
            break
    return results


def _run_one(runner: Runner, hook: Hook, ctx: Context, cwd: str, claim: Claim | None,
             keys: set[str]) -> HookResult:
    if not is_approved(hook, keys) and not _approve_now(runner, ctx.bucket, hook):
        whose = "project hook" if hook.source == PROJECT else f"{hook.source} hook"
        runner.warn(f"{whose} {hook.name} ({hook.type}) is not approved, so it did "
                    f"not run; see vwt hooks, then vwt hooks approve {hook.name}")
        return HookResult(hook.name, hook.type, hook.source, SKIPPED_UNAPPROVED)
    if hook.background:
        return _start_background(runner, hook, ctx, cwd, claim)
    result = _run_held(runner, hook, ctx, cwd, claim)
    if result.failed:
        how = "timed out" if result.status == TIMED_OUT else f"exited {result.exit_code}"
        runner.warn(f"hook {hook.name} ({hook.type}) {how}")
    return result


def _approve_now(runner: Runner, bucket: str, hook: Hook) -> bool:
    if runner.ask is None or not runner.ask(hook):
        return False
    change_approvals(runner.home, bucket, [hook], approve=True)
    return True


def _holder_id(hook: Hook, pid: int) -> str:
    return f"hook-{hook.name}-{pid}"


def _run_held(runner: Runner, hook: Hook, ctx: Context, cwd: str,
              claim: Claim | None) -> HookResult:
    def run() -> HookResult:
        if runner.host is None:
            return run_foreground(hook, ctx, cwd)
        return run_tied(hook, ctx, cwd, runner.host)

    if claim is None:
        return run()
    from ..core.locks import acquire_holder

    with acquire_holder(claim, _holder_id(hook, os.getpid())):
        return run()


def run_foreground(hook: Hook, ctx: Context, cwd: str) -> HookResult:
    """`sh -c` in its own process group, output on our stderr (stdout is the result's),
    stdin /dev/null; on timeout the whole group is killed. Interrupted (Ctrl-C, SIGTERM),
    the group gets the same signal, as it would in a terminal's foreground, then SIGKILL
    a moment later if any of it is left."""
    import signal
    import subprocess

    child = None
    try:  # from before the start: an interruption right after it still stops the hook
        child = subprocess.Popen(["/bin/sh", "-c", hook.command], cwd=cwd, env=ctx.env(hook),
                                 stdin=subprocess.DEVNULL, stdout=_stderr_fd(),
                                 start_new_session=True)
        code = child.wait(timeout=hook.timeout)
    except subprocess.TimeoutExpired:
        assert child is not None
        _kill_group(child.pid, signal.SIGKILL)
        child.wait()
        return HookResult(hook.name, hook.type, hook.source, TIMED_OUT, None)
    except BaseException as exc:
        if child is not None:
            _stop_foreground(child, exc)
        elif isinstance(exc, OSError):
            raise VwtError(f"hook {hook.name} could not start: {exc.strerror}") from None
        raise
    status = OK if code == 0 else FAILED
    return HookResult(hook.name, hook.type, hook.source, status, code)


def _stop_foreground(child: subprocess.Popen[bytes], why: BaseException) -> None:
    """Interrupted (Ctrl-C; SIGTERM as `Interrupted`), the hook's group gets the same
    signal, then SIGKILL a moment later; any other failure kills it at once."""
    import signal

    from .hook_supervisor import stop_group

    if isinstance(why, KeyboardInterrupt):
        stop_group(child, getattr(why, "signum", signal.SIGINT))
    else:
        _kill_group(child.pid, signal.SIGKILL)
        child.wait()


def run_tied(hook: Hook, ctx: Context, cwd: str, host: Host) -> HookResult:
    """A foreground hook run for an agent: under the hook supervisor, in a session of its
    own, which stops the hook's group when the agent process dies or when this process
    does (the end of file of its stdin, a pipe only we hold). So a SIGKILL of the agent's
    whole process group, this process included, leaves no hook running either.
    AgentGone when the agent died first."""
    import subprocess

    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "vibe_worktree.lifecycle.hook_supervisor", str(hook.timeout),
             hook.command, *_host_args(host), "--foreground"],
            cwd=cwd, env=ctx.env(hook), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=_stderr_fd(), start_new_session=True)
    except OSError as exc:
        raise VwtError(f"hook {hook.name} could not start: {exc.strerror}") from None
    assert child.stdin is not None and child.stdout is not None
    try:
        report = child.stdout.read().decode("utf-8", "replace").strip()
        child.wait()
    finally:
        child.stdin.close()  # at an exception here, that stops the hook
        child.stdout.close()
        if child.poll() is None:
            child.wait()
    kind, _, value = report.partition(" ")
    if kind == "exit" and value.lstrip("-").isdigit():
        code = int(value)
        return HookResult(hook.name, hook.type, hook.source, OK if code == 0 else FAILED, code)
    if kind == "timeout":
        return HookResult(hook.name, hook.type, hook.source, TIMED_OUT, None)
    if report == "stopped agent":
        raise AgentGone(f"the agent process {host.pid} ended while {hook.type} hook "
                        f"{hook.name} ran; the hook was stopped and {ctx.name} is left at "
                        f"{ctx.path}: vwt rm {ctx.name} -y removes it")
    raise VwtError(f"hook {hook.name} ended without a word from its keeper "
                   f"(status {child.returncode})")


def _stderr_fd() -> int:
    try:
        return sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):
        return 2


def _kill_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass


# -- background -------------------------------------------------------------------------------
def log_path(home: str, bucket: str, name: str, hook: Hook) -> str:
    return f"{home}/logs/worktree/{bucket}/{name}/{hook.name}.log"


def _start_background(runner: Runner, hook: Hook, ctx: Context, cwd: str,
                      claim: Claim | None) -> HookResult:
    """Detach a supervisor that runs the hook with its timeout and holds the worktree
    (the locked holder file is handed to it) until the hook ends, or until the runner's
    agent process dies."""
    import subprocess

    from ..core.locks import acquire_holder

    log = log_path(runner.home, ctx.bucket, ctx.name, hook)
    os.makedirs(os.path.dirname(log), exist_ok=True)
    holder = acquire_holder(claim, _holder_id(hook, os.getpid())) if claim else None
    fds = (holder.fileno(),) if holder else ()
    try:
        with open(log, "ab") as out:
            out.write(f"[vwt] {utc_now()} {hook.type} hook {hook.name}: {hook.command}\n"
                      .encode())
            out.flush()
            child = subprocess.Popen(
                [sys.executable, "-m", "vibe_worktree.lifecycle.hook_supervisor", str(hook.timeout),
                 hook.command, *_host_args(runner.host), *_holder_args(claim, fds, hook)],
                cwd=cwd, env=ctx.env(hook), stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                start_new_session=True, close_fds=True, pass_fds=fds,
            )
        if holder is not None:
            holder.hand_over(_holder_id(hook, child.pid))
    except BaseException:
        if holder is not None:
            holder.release()
        raise
    return HookResult(hook.name, hook.type, hook.source, STARTED, None)


STOP_WAIT = 3.0  # for keepers to stop their hooks: their second of grace, and then some


def stop_started(claim: Claim, results: Sequence[HookResult]) -> None:
    """Stop the background hooks `results` started on `claim` (for a creation that failed):
    each keeper, found by its live holder `hook-<name>-<pid>`, gets SIGTERM, stops its hook's
    process group and lets go; wait for that, at most STOP_WAIT seconds in all."""
    import signal
    import time

    from ..core.locks import live_holders, registry_lock, wait_for_holder_release

    names = {r.name for r in results if r.status == STARTED}
    if not names:
        return
    stopped = []
    # A keeper is this process's child, not reaped while its holder is live, and lets go
    # only under the registry lock: held, a live holder's pid is the keeper's own.
    with registry_lock(claim.root):
        for holder_id in live_holders(claim):
            name, _, pid = holder_id.removeprefix("hook-").rpartition("-")
            if (not holder_id.startswith("hook-") or name not in names or not pid.isdigit()
                    or int(pid) == os.getpid()):
                continue
            try:
                os.kill(int(pid), signal.SIGTERM)
            except ProcessLookupError:
                continue
            stopped.append(holder_id)
    deadline = time.monotonic() + STOP_WAIT
    for holder_id in stopped:
        wait_for_holder_release(claim, holder_id, max(0.0, deadline - time.monotonic()))


def _host_args(host: Host | None) -> list[str]:
    """The agent process the hook must not outlive (pid and start time: a pid the kernel
    gave to another process after the agent died is not the agent)."""
    return [] if host is None else ["--host", str(host.pid), host.started]


def _holder_args(claim: Claim | None, fds: tuple[int, ...], hook: Hook) -> list[str]:
    """How the supervisor finds the hold it inherits, to delete it when the hook ends, and
    the hook's id, to take it out of the record's pending setup once it succeeded."""
    if claim is None or not fds:
        return []
    return [claim.root.path, claim.bucket, claim.name, str(fds[0]), hook.setup_id]


# -- the commands' entry points ---------------------------------------------------------------
def context(home: str, bucket: str, name: str, branch: str, path: str, repo_root: str,
            base_commit: str, into: str | None = None, warn: Warn | None = None,
            sparse: bool = False) -> Context:
    """The context of a managed worktree's hooks: its environment as `vwt env` prints it. An
    `[env]` table that cannot be applied is left out with a warning: a hook never fails a
    command for it (`vwt env` says what is wrong)."""
    from ..core.layout import Root
    from ..core.leases import recorded_ports
    from . import environment as _env

    say = warn or (lambda _m: None)
    worktree = _env.Worktree(bucket, name, branch, path, repo_root,
                             recorded_ports(Root.at(home), bucket, name), sparse)
    made: list[Mapping[str, str]] = []

    def variables() -> Mapping[str, str]:
        if not made:
            try:
                made.append(_env.of_worktree(home, worktree, say))
            except (_env.EnvError, HooksFileError) as exc:
                say(f"{exc.message}; the hooks run without the [env] table")
                made.append(_env.of_worktree(home, worktree, say, with_table=False))
        return made[0]

    return Context(name, branch, path, bucket, repo_root, base_commit, variables, into)


def pool_context(entry_id: str, path: str, bucket: str, repo_root: str, base: str) -> Context:
    """A pool entry's hooks: no worktree yet, so no name, branch, port or `[env]` table
    (`VWT_NAME` is the entry's id, `VWT_PORT` 0), and `VWT_POOL=1`."""
    from .environment import Place, own_variables

    variables = own_variables(Place(entry_id, "", path, bucket, repo_root, ()))
    return Context(entry_id, "", path, bucket, repo_root, base, lambda: variables, pool=True)


def post_create_hooks(home: str, ctx: Context, sparse: bool = False,
                      warn: Warn | None = None) -> list[Hook]:
    """The user's post_create hooks, then those of the new checkout's own
    `.vibe/worktree.toml` (a sparse one's: of its HEAD, the start point of a new one; a
    restored one's base is older than that), else of the main checkout's setup file for
    another tool; HooksFileError."""
    found = load_all(home, ctx.path, "HEAD" if sparse else None, ctx.repo_root, warn)
    return [h for h in found if h.type == POST_CREATE]


def warn_broken(runner: Runner, exc: HooksFileError) -> None:
    """A broken file never fails a creation: a warning, and none of its hooks runs."""
    runner.warn(f"{exc.message.removesuffix('; fix it or pass --no-hooks')}; "
                "no hook of that file ran")


def before_remove(runner: Runner, ctx: Context) -> tuple[tuple[HookResult, ...], str | None]:
    """pre_remove: results, and why the removal must stop (a failure or a broken file)."""
    try:
        found = load_all(runner.home, ctx.path, repo_root=ctx.repo_root, warn=runner.warn)
    except HooksFileError as exc:
        return (), f"{exc.message}; nothing removed"
    results = run_hooks(runner, PRE_REMOVE, found, ctx, ctx.path, stop_on_failure=True)
    failed = [r for r in results if r.failed]
    if not failed:
        return tuple(results), None
    how = "timed out" if failed[0].status == TIMED_OUT else f"exited {failed[0].exit_code}"
    return tuple(results), (f"pre_remove hook {failed[0].name} {how}; nothing removed (fix "
                            "it, or pass --no-hooks to remove without hooks)")


def for_merge(runner: Runner, checkout: str) -> Callable[..., tuple[tuple[HookResult, ...],
                                                                   str | None]]:
    """The hooks of a merge: read once from the worktree's checkout (before it goes), with
    its environment (its lease is released with it), run at each moment with VWT_INTO.
    pre_merge and pre_remove stop at a failure."""
    found: list[Hook] | None = None
    first: Context | None = None

    def run(kind: str, target: Any, into: str, cwd: str
            ) -> tuple[tuple[HookResult, ...], str | None]:
        nonlocal found, first
        if found is None:
            try:
                found = load_all(runner.home, checkout, repo_root=target.record.repo_root,
                                 warn=runner.warn)
            except HooksFileError as exc:
                found = []
                return (), f"{exc.message}; nothing merged"
        claim, record = target.claim, target.record
        if first is None:
            first = context(runner.home, claim.bucket, claim.name, record.branch,
                            claim.checkout, record.repo_root, record.base_commit or "", into,
                            runner.warn, bool(record.sparse))
            if found:  # now, while the worktree and its lease are there
                first.variables()
        ctx = first._replace(into=into)
        results = run_hooks(runner, kind, found, ctx, cwd, stop_on_failure=kind != POST_MERGE)
        failed = [r for r in results if r.failed]
        if not failed or kind == POST_MERGE:
            return tuple(results), None
        how = "timed out" if failed[0].status == TIMED_OUT else f"exited {failed[0].exit_code}"
        return tuple(results), (f"{kind} hook {failed[0].name} {how}; nothing changed (fix it, "
                                "or pass --no-hooks)" if kind == PRE_MERGE else
                                f"{kind} hook {failed[0].name} {how}")
    return run


def run_setup(runner: Runner, claim: Claim, ctx: Context, sparse: bool, reuse: Reuse | None,
              rerun: bool) -> list[HookResult]:
    """The post_create hooks of a new worktree, or with `rerun` those of a reused one that
    did not succeed, held (`.setup`) from start to end so that no removal comes in between
    and no second `new` runs them at the same time. The record says which are still due
    before each one starts, and no longer lists one once it succeeded."""
    from ..core.errors import HeldError
    from ..core.locks import (
        acquire_holder,
        being_removed,
        live_holders,
        registry_lock,
        running_hooks,
    )
    from ..core.records import CorruptRecord, read_record

    try:
        hold = acquire_holder(claim, setup_state.HOLDER)
    except HeldError:
        if not rerun or being_removed(claim):
            raise
        runner.warn(f"{claim.name}: another process is running its setup; not run again")
        return []
    with hold:
        try:
            record = read_record(claim.record_path, claim.name)
        except (OSError, CorruptRecord):
            return []
        if rerun and not setup_state.pending(record):
            return []  # another `new` finished it meanwhile
        due = setup_state.pending_ids(record)
        try:
            found = post_create_hooks(runner.home, ctx, sparse, runner.warn)
        except HooksFileError as exc:
            warn_broken(runner, exc)
            return []  # still due: once the file is fixed, `vwt new NAME` runs them
        if rerun and due is not None:
            found = [h for h in found if h.setup_id in due]
        with registry_lock(claim.root):
            running = set(running_hooks(live_holders(claim)))
        due_now = [h.setup_id for h in found]
        _noting(runner, claim, lambda: setup_state.note_due(claim, due_now))
        wanted = [h for h in found if h.name not in running]  # a keeper still runs those

        def settled(hook: Hook, result: HookResult) -> None:
            # skipped unapproved: a decision (no terminal, or "no"), not a failure
            if result.status in (OK, POOLED, SKIPPED_UNAPPROVED):
                _noting(runner, claim, lambda: setup_state.settle(claim, [hook.setup_id]))

        return run_hooks(runner, POST_CREATE, wanted, ctx, ctx.path, claim,
                         reuse=reuse, settled=settled)


def _noting(runner: Runner, claim: Claim, write: Callable[[], None]) -> None:
    """A write of the setup's state that must not fail the creation (a full disk): the
    record then says less has succeeded than has, which only runs a hook again."""
    try:
        write()
    except OSError as exc:
        runner.warn(f"{claim.name}: could not record its setup's progress "
                    f"({exc.strerror or exc}); vwt new {claim.name} may run a hook again")
