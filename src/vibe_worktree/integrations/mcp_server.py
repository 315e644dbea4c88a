"""`vwt mcp`: the operations of the CLI as Model Context Protocol tools on stdio.

Built on the official `mcp` SDK (the optional extra `vibe-worktree[mcp]`): its
`MCPServer` (mcp 2.x) or `FastMCP` (mcp 1.x). Each tool's text result is the JSON
document `vwt ... --json` prints; the same data is the structured result (a list
is wrapped as `{"worktrees": [...]}` there, since structured results are objects).

One stdio server serves one client session. Every worktree the session creates or
restores is held by it (a holder file, as `vwt run` uses) until it disconnects, so
retention never removes a worktree an agent is working in; its own holds do not
block its own `remove`.
"""

from __future__ import annotations

import importlib
import json
import signal
import sys
import threading
from typing import Any

from ..api import Worktrees
from ..core.errors import DiskFull, VwtError, disk_is_full
from ..core.locks import Holder, new_holder_id

INSTRUCTIONS = (
    "vibe-worktree gives each coding session its own git worktree. Call `create` before "
    "editing files for a task and work only inside the returned `path`. `status` tells what "
    "removing a worktree would lose; `remove` refuses dirty work unless `confirm` is true "
    "(ask the user first; a snapshot is kept) and always refuses a worktree another live "
    "session holds. Worktrees this session creates or restores are held until it disconnects. "
    "Call `conflicts` with `path` before editing a file and with `name` before merging: it "
    "says which other sessions change the same paths and where they would conflict. "
    "Before testing a server on your worktree's port, call `ps` with `name` and `check`: it "
    "says whether that port is really served from your worktree."
)
DIRECTORY_HELP = "a directory inside the repository (default: where `vwt mcp` was started)"


def _server_class() -> Any:
    """`MCPServer` in mcp 2.x, `FastMCP` in mcp 1.x."""
    try:
        return importlib.import_module("mcp.server.mcpserver").MCPServer
    except ImportError:
        return importlib.import_module("mcp.server.fastmcp").FastMCP


def _tool_error(message: str) -> Exception:
    for module in ("mcp.server.mcpserver.exceptions", "mcp.server.fastmcp.exceptions"):
        try:
            error_type: type[Exception] = importlib.import_module(module).ToolError
        except ImportError:
            continue
        return error_type(message)
    return RuntimeError(message)  # pragma: no cover - every SDK version has one of them


def _result(data: object, is_error: bool = False) -> Any:
    """A tool result: the CLI's JSON as text, and the same data as structured content."""
    from mcp.types import CallToolResult

    structured = data if isinstance(data, dict) else {"worktrees": data}
    return CallToolResult.model_validate({
        "content": [{"type": "text", "text": json.dumps(data, indent=2)}],
        "structuredContent": structured,
        "isError": is_error,
    })


class Session:
    """The holds of the one connected client, released when it goes."""

    def __init__(self, wt: Worktrees) -> None:
        self.home = wt.root.home
        self.cwd = wt.cwd
        self.warn = wt.warn
        self.holder_id = new_holder_id("vwt-mcp")
        self._held: dict[tuple[str, str], Holder] = {}
        self._lock = threading.Lock()

    def worktrees(self, directory: str | None) -> Worktrees:
        return Worktrees(home=self.home, cwd=directory or self.cwd, warn=self.warn)

    def hold(self, wt: Worktrees, name: str) -> None:
        key = (wt.repo.bucket, name)
        with self._lock:
            if key in self._held and self._held[key].active:
                return
            try:
                self._held[key] = wt.hold(name, self.holder_id)
            except VwtError as exc:
                self.warn(f"{name} is not held by this session: {exc.message}")

    def let_go(self, wt: Worktrees, name: str) -> bool:
        """Release this session's hold on NAME; True when it had one."""
        with self._lock:
            holder = self._held.pop((wt.repo.bucket, name), None)
        if holder is None:
            return False
        holder.release()
        return True

    def release_all(self) -> None:
        with self._lock:
            holders, self._held = list(self._held.values()), {}
        for holder in holders:
            holder.release()

    @property
    def held(self) -> list[tuple[str, str]]:
        with self._lock:
            return sorted(self._held)


def _call(action: Any) -> Any:
    """Run one tool body; a VwtError becomes a tool error the model can read."""
    try:
        return action()
    except VwtError as exc:
        raise _tool_error(f"{exc.message} (exit {exc.exit_code})") from None
    except OSError as exc:
        if not disk_is_full(exc):
            raise
        raise _tool_error(f"{DiskFull(exc.filename and f'writing {exc.filename}').message} "
                          "(exit 1)") from None


def _remove(session: Session, name: str, confirm: bool, delete_branch: bool,
            directory: str | None, stop: bool = False) -> Any:
    from ..lifecycle.remove import KEPT_DIRTY, KEPT_IN_USE, NOT_FOUND

    wt = session.worktrees(directory)
    # The session keeps its hold while removing, so prune cannot slip in meanwhile; the
    # hold does not block the removal, and goes with the worktree.
    removal = wt.remove(name, confirm_dirty=confirm, delete_branch=True if delete_branch else None,
                        own_holders=[session.holder_id], stop=stop)
    if removal.outcome not in (KEPT_DIRTY, KEPT_IN_USE):
        session.let_go(wt, name)
    data = removal.to_json()
    if removal.message:
        data["message"] = removal.message
    return _result(data, is_error=removal.outcome == NOT_FOUND)


def _merge(session: Session, name: str, into: str | None, mode: str, message: str | None,
           commit: bool, keep: bool, fetch: bool, directory: str | None) -> Any:
    from ..core.locks import live_holders, registry_lock
    from ..landing.merge import KEPT_IN_USE, MergeResult

    wt = session.worktrees(directory)
    claim = wt.claim(name)
    with registry_lock(wt.root):  # unlike the CLI, `keep` never overrides another's hold
        others = [h for h in live_holders(claim) if h != session.holder_id]
    if keep and others:
        result = MergeResult(name, KEPT_IN_USE, wt.merge_target(into), mode, message=(
            f"{name} is held by a live session ({', '.join(others)}); nothing merged"))
    else:
        result = wt.merge(name, into=into, mode=mode, message=message, commit=commit, keep=keep,
                          fetch=fetch, own_holders=[session.holder_id])
    if result.removed:
        session.let_go(wt, name)
    data = result.to_json()
    if result.message:
        data["message"] = result.message
    return _result(data, is_error=result.exit_code == 1)


def _land(session: Session, names: list[str] | None, ready: bool, into: str | None,
          gate: str | None, mode: str, keep: bool, wait: bool, dry_run: bool,
          directory: str | None) -> Any:
    wt = session.worktrees(directory)
    report = wt.land(names or (), ready=ready, into=into, gate=gate, mode=mode, keep=keep,
                     wait=wait, dry_run=dry_run, own_holders=[session.holder_id])
    for result in report.results:
        if result.removed:
            session.let_go(wt, result.name)
    return _result(report.to_json(), is_error=report.exit_code != 0)


def _sync(session: Session, name: str, onto: str | None, fetch: bool, stop_on_conflict: bool,
          resume: str | None, directory: str | None) -> Any:
    wt = session.worktrees(directory)
    if resume == "continue":
        result = wt.sync_continue(name)
    elif resume == "abort":
        result = wt.sync_abort(name)
    elif resume is None:
        result = wt.sync(name, onto=onto, fetch=fetch, stop_on_conflict=stop_on_conflict)
    else:
        raise VwtError(f"resume is continue or abort, not {resume!r}", 2)
    data = result.to_json()
    if result.message:
        data["message"] = result.message
    return _result(data, is_error=result.exit_code == 1)


def _tools(session: Session) -> list[tuple[str, Any]]:
    """(name, function) per tool; each mirrors one CLI command and its `--json` output."""

    def create(name: str | None = None, prompt: str | None = None, branch: str | None = None,
               from_ref: str | None = None, fetch: bool = True,
               directory: str | None = None, pr: int | None = None,
               sparse: list[str] | None = None, carry: bool = False) -> Any:
        def run() -> Any:
            wt = session.worktrees(directory)
            # as a caller without a terminal: unapproved project hooks are skipped. No
            # `move`: it would take work out of a checkout the agent does not own.
            created = wt.create(name, prompt=prompt, branch=branch, from_ref=from_ref,
                                fetch=fetch, pr=pr, sparse=sparse, carry=carry)
            session.hold(wt, created.name)
            return _result(created.to_json())
        return _call(run)

    def list_worktrees(all_repos: bool = False, status: bool = True,
                       directory: str | None = None) -> Any:
        def run() -> Any:
            rows = session.worktrees(directory).list(all_repos=all_repos, with_status=status)
            return _result([r.to_json() for r in rows])
        return _call(run)

    def status(name: str, directory: str | None = None) -> Any:
        return _call(lambda: _result(session.worktrees(directory).status(name).to_json()))

    def remove(name: str, confirm: bool = False, delete_branch: bool = False,
               directory: str | None = None, stop: bool = False) -> Any:
        return _call(lambda: _remove(session, name, confirm, delete_branch, directory, stop))

    def snapshot(name: str, directory: str | None = None) -> Any:
        return _call(lambda: _result(session.worktrees(directory).snapshot(name).to_json()))

    def restore(name: str, directory: str | None = None) -> Any:
        def run() -> Any:
            wt = session.worktrees(directory)
            created = wt.restore(name)
            session.hold(wt, created.name)
            return _result(created.to_json())
        return _call(run)

    def prune(keep: int | None = None, dry_run: bool = False, merged: bool = False,
              max_size: str | None = None) -> Any:
        return _call(lambda: _result(session.worktrees(None).prune(
            keep=keep, dry_run=dry_run, merged=merged, max_size=max_size).to_json()))

    def merge(name: str, into: str | None = None, mode: str = "squash",
              message: str | None = None, commit: bool = False, keep: bool = False,
              fetch: bool = True, directory: str | None = None) -> Any:
        return _call(lambda: _merge(session, name, into, mode, message, commit, keep, fetch,
                                    directory))

    def land(names: list[str] | None = None, ready: bool = False, into: str | None = None,
             gate: str | None = None, mode: str = "squash", keep: bool = False,
             no_wait: bool = False, dry_run: bool = False,
             directory: str | None = None) -> Any:
        return _call(lambda: _land(session, names, ready, into, gate, mode, keep,
                                   not no_wait, dry_run, directory))

    def sync(name: str, onto: str | None = None, fetch: bool = True,
             stop_on_conflict: bool = False, resume: str | None = None,
             directory: str | None = None) -> Any:
        return _call(lambda: _sync(session, name, onto, fetch, stop_on_conflict, resume,
                                   directory))

    def conflicts(name: str | None = None, all_repos: bool = False, path: str | None = None,
                  directory: str | None = None) -> Any:
        return _call(lambda: _result(session.worktrees(directory).conflicts(
            name, all_repos=all_repos, path=path).to_json()))

    def foreign(all_repos: bool = False, directory: str | None = None) -> Any:
        return _call(lambda: _result({"worktrees": [
            r.to_json() for r in session.worktrees(directory).foreign(all_repos=all_repos)]}))

    def adopt(paths: list[str] | None = None, all: bool = False,
              directory: str | None = None) -> Any:
        def run() -> Any:
            result = session.worktrees(directory).adopt(paths or (), all_foreign=all)
            return _result(result.to_json(), is_error=bool(result.refused))
        return _call(run)

    def ps(name: str | None = None, all_repos: bool = False, check: bool = False,
           directory: str | None = None) -> Any:
        def run() -> Any:
            found = session.worktrees(directory).ps(name, all_repos=all_repos)
            return _result(found.to_json(), is_error=check and bool(found.mismatches))
        return _call(run)

    def pool(all_repos: bool = False, directory: str | None = None) -> Any:
        return _call(lambda: _result({"pools": [p.to_json() for p in session.worktrees(
            directory).pool_status(all_repos=all_repos)]}))

    def env(name: str | None = None, directory: str | None = None) -> Any:
        return _call(lambda: _result(session.worktrees(directory).env(name).to_json()))

    return [("create", create), ("list", list_worktrees), ("status", status),
            ("remove", remove), ("snapshot", snapshot), ("restore", restore), ("prune", prune),
            ("merge", merge), ("land", land), ("sync", sync), ("conflicts", conflicts),
            ("foreign", foreign), ("adopt", adopt), ("pool", pool), ("env", env), ("ps", ps)]


DESCRIPTIONS = {
    "create": (
        "Create a git worktree for a task, or reuse NAME if it already exists. Give `name` "
        "(also the branch, unless `branch` is set) or a `prompt` to name it from (branch "
        "vibe/<slug>); neither gives a random name. `from_ref`: start point of a new branch "
        "(default: the remote's default branch, fetched unless `fetch` is false). `pr`: start "
        "from pull request N of the remote, in branch pr-N (name defaults to pr-N). `sparse`: "
        "folders of a sparse checkout. `carry`: copy the uncommitted work of the checkout at "
        "`directory` (or the server's) into the new worktree, on a new branch from its HEAD "
        "(or `from_ref`, if the work applies cleanly); the source keeps its copy. Lifecycle "
        "hooks run: the user's, and project hooks already approved (others are skipped; see "
        "`hooks` in the result). Returns {name, branch, path, bucket, repo_root, base_commit, "
        "branch_created, created, hooks, sparse, pooled, and carried when carrying}; work "
        "inside `path`. `pooled` is true when a ready worktree of the repository's warm pool "
        "was taken (its setup hooks had already run). The worktree is held by this session "
        "until it disconnects."
    ),
    "list": (
        "List the managed worktrees of the repository (all repositories with `all_repos`). "
        "Each: {name, branch, path, bucket, repo_root, base_commit, branch_created, "
        "claimed_at, state, held, holders, changes, ahead, clean, target, behind, integrated, "
        "safe_to_remove, ports}; `ports` is the worktree's block of TCP ports; "
        "`integrated` says why its commits are already in the target branch "
        "(same_commit, ancestor, same_tree, no_added_changes, patch_equivalent, squashed) or "
        "is null; `rebase` is \"stopped\" while a sync is stopped at a conflict there (its "
        "work is then never called landed: integrated null, safe_to_remove false); "
        "`safe_to_remove` is true when removing it loses nothing. `status: false` skips git "
        "status (those fields are then null)."
    ),
    "status": (
        "Inspect what removing worktree NAME would lose: {name, path, branch, "
        "branch_created, base_commit, changes, untracked, ahead, clean, held, holders, target, "
        "behind, integrated, safe_to_remove, ports} (the last five as in `list`)."
    ),
    "remove": (
        "Remove worktree NAME safely. Outcome: removed, kept_dirty (uncommitted work or "
        "commits would be lost: nothing changed; ask the user, then call again with "
        "`confirm: true`, which snapshots the work first so `restore` can undo it), "
        "kept_in_use (another live session holds it, never overridden; or processes run "
        "inside it, listed in `processes`: `stop: true` stops them first, SIGTERM then "
        "SIGKILL after 5 s, listed in `stopped`), not_found, or "
        "forgotten (a snapshot-only entry: its snapshot ref is deleted too when the target "
        "branch already has all of it, else it stays and snapshot_ref names it). A branch "
        "that existed before is kept unless `delete_branch`. Returns "
        "{name, outcome, branch_deleted, snapshot_ref, hooks, stopped, processes, message}."
    ),
    "snapshot": (
        "Save worktree NAME's full state (untracked files included, ignored excluded) to "
        "refs/vibe/reaped/NAME without touching its files. Returns {name, ref, commit}."
    ),
    "restore": (
        "Recreate a snapshotted-and-removed worktree NAME with its files as uncommitted "
        "changes. Returns the same shape as `create`; the worktree is held by this session."
    ),
    "prune": (
        "Retention across all repositories: snapshot-then-remove the oldest unheld worktrees "
        "beyond `keep` (default: VIBE_WORKTREE_LIMIT, config.toml worktree_limit, or 15). "
        "Use `dry_run: true` to see the plan first; `merged: true` also removes every clean "
        "unheld worktree whose commits are already in its target branch; `max_size` (\"20G\", "
        "\"500M\") then removes warm pool entries and the oldest unheld worktrees, snapshotted "
        "first, until all of them take at most that. Returns {removed (each with its reason), "
        "kept, reservations_discarded, stale_holders_removed, pool_removed, freed_bytes, "
        "leases_dropped}."
    ),
    "merge": (
        "Land worktree NAME's commits on the target branch (`into`, default main or the "
        "remote's default) and remove the worktree (unless `keep`: it then moves onto the new "
        "tip). `mode`: squash (default, one commit; `message` names it), rebase or ff-only. "
        "Uncommitted changes refuse (kept_dirty) unless `commit`. A snapshot is taken first, "
        "so `restore` undoes it. Outcomes: merged, up_to_date, kept_dirty, kept_in_use "
        "(another live session holds it; never overridden, not even with `keep`), conflict "
        "(paths in `conflicts`), not_fast_forward, target_moved, target_dirty; all but merged "
        "change nothing. Processes running inside the worktree keep it after landing "
        "(removed false, kept_reason \"processes_running\"). Returns {name, outcome, into, "
        "mode, commit, conflicts, removed, branch_deleted, snapshot_ref, head, hooks, "
        "kept_reason, message}."
    ),
    "land": (
        "Land finished worktrees through the local merge queue, one at a time: each is "
        "rebased onto the target branch's tip (`into`, default main or the remote's default), "
        "checked by `gate` (a shell command run in it; default: the repository's approved "
        "[land] gate, if any) on exactly that state, and landed as `merge` lands it (`mode`) "
        "only if the target is still that commit (else again, 3 attempts at most); then "
        "removed unless `keep`. `names` default to the worktree containing `directory`; "
        "`ready`: every worktree with commits to land, nothing uncommitted and no other live "
        "holder. Another land of the same target waits its turn (or is `busy` at once with "
        "`no_wait`). `dry_run`: the order and collision forecast only. Call it as your last "
        "step, e.g. names [your worktree], gate \"pytest -q\". Returns {into, dry_run, order, "
        "results: [{name, outcome, commit, attempts, gate: {command, exit, seconds, log, "
        "timed_out} or null, conflicts, removed, message}]}; outcomes merged, up_to_date, "
        "conflict, kept_dirty, kept_in_use, gate_failed (nothing landed, the branch stays "
        "rebased; see the gate's log), gate_unapproved, target_moved, busy, not_found, "
        "target_dirty, hook_failed, error."
    ),
    "sync": (
        "Rebase worktree NAME's own commits onto the target branch (`onto`; the fetched "
        "remote-tracking branch when it is ahead) inside its checkout. Outcomes: synced, "
        "up_to_date, conflict (nothing changed; paths in `conflicts`), kept_dirty. To resolve "
        "a conflict: `stop_on_conflict` leaves the rebase stopped in the checkout "
        "(conflict_stopped, paths in `conflicts`); fix and `git add` those files, then call "
        "again with `resume` \"continue\" (synced, or conflict_stopped at the next one), or "
        "\"abort\" to put everything back as before the sync (aborted). Returns "
        "{name, outcome, onto, head, conflicts, message}."
    ),
    "conflicts": (
        "Where parallel sessions will conflict, before they do: call it before editing a "
        "file (`path`: that file or folder, relative to the top level) and before merging "
        "(`name`: your worktree). Reads every ready worktree's work (uncommitted and "
        "untracked changes included) without changing or locking anything. Returns "
        "{worktrees: [{name, bucket, branch, target, changed, target_conflicts, error}], "
        "pairs: [{bucket, a, b, overlap, conflicts}]}: `target_conflicts` are the paths that "
        "would conflict when merged into the target branch, a pair's `overlap` the paths both "
        "changed and its `conflicts` those that would conflict between them. `all_repos`: "
        "every repository."
    ),
    "foreign": (
        "List the git worktrees other tools made (Claude Code's .claude/worktrees/, Codex, "
        "Cursor, plain `git worktree add`) that vwt does not manage, the main working tree "
        "excepted; `all_repos`: of every repository vwt knows. Changes nothing. Returns "
        "{worktrees: [{path, repo_root, branch, head, made_by, locked, in_use, changes, "
        "untracked, ahead, integrated}]}: `ahead` counts its commits not in the target "
        "branch, `integrated` says why they are already there (or is null)."
    ),
    "adopt": (
        "Bring worktrees other tools made under management: each of `paths` (their top "
        "folders; relative ones to `directory`), or with `all: true` each one `foreign` "
        "lists, is moved into the managed root with every file, index entry, stash and "
        "branch as it was, and is then held, listed, snapshotted and removed like any other. "
        "Refused, with nothing changed: locked, in use (a process's current directory is "
        "inside), the main working tree, another filesystem, submodules, a detached HEAD, "
        "already managed. Returns {adopted: [{path, name, from, branch, made_by, bucket}], "
        "refused: [{path, reason, message}]}; an error result when any was refused."
    ),
    "ps": (
        "Which processes run inside each managed worktree of the repository (NAME's alone "
        "with `name`; every repository with `all_repos`) and who listens on each port of its "
        "lease: {worktrees: [{name, bucket, path, ports, processes: [{pid, command, "
        "listening}], port_owners: [{port, pid, command, cwd, inside, uid}], unreadable}], "
        "mismatches: [{name, bucket, port, pid, cwd, message}]}. A mismatch is a port of a "
        "worktree's lease served by a process from another folder: call it with your "
        "worktree's `name` and `check: true` (an error result when there is a mismatch) "
        "before you test the server you think is yours. Changes nothing."
    ),
    "pool": (
        "The warm pool of ready worktrees (setup hooks already run) that `create` takes "
        "from: {pools: [{bucket, repo_root, size, ready, filling, base, broken}]} for this "
        "repository (every repository with `all_repos`). Read-only; the user fills and "
        "drains it with `vwt pool fill` / `vwt pool drain`."
    ),
    "env": (
        "Worktree NAME's environment (without `name`: of the worktree containing "
        "`directory`), as its hooks, `vwt run` and `vwt shell` get it: "
        "{name, bucket, env: {VWT_NAME, VWT_BRANCH, VWT_PATH, VWT_BUCKET, VWT_REPO_ROOT, "
        "VWT_PORT, VWT_PORTS, PORT, COMPOSE_PROJECT_NAME, then the keys of the repository's "
        "approved [env] table}}. Start a server of this worktree on its own PORT (every "
        "worktree has its own block of ports: VWT_PORTS), never on a port of your choosing."
    ),
}


def register_tools(server: Any, session: Session) -> None:
    for name, function in _tools(session):
        description = DESCRIPTIONS[name]
        if name != "prune":
            description += f" `directory`: {DIRECTORY_HELP}."
        server.add_tool(function, name=name, description=description)


def build_server(session: Session) -> Any:
    server = _server_class()(name="vibe-worktree", instructions=INSTRUCTIONS,
                             log_level="WARNING")
    register_tools(server, session)
    return server


def _terminate(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def serve(wt: Worktrees) -> int:
    """Serve on stdin/stdout until the client disconnects; then release the holds."""
    session = Session(wt)
    server = build_server(session)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        server.run("stdio")
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        session.release_all()
    sys.stderr.flush()
    return 0


__all__ = ["Session", "build_server", "serve"]
