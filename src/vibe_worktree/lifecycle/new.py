"""`vwt new` and `vwt restore` from the request to the ready worktree: the checks that come
before anything is made, the carried work (`carry.py`), the checkout (`create.py`), its
post_create hooks (run again only where a pool entry's inputs changed), and the pool's
refill in the background (`pool_fill.py`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from ..core.errors import Interrupted, VwtError
from ..core.layout import Root
from ..core.light import NamedTuple
from . import setup_state
from .worktrees import Repo, open_repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..core.host import Host
    from .create import Created, Output
    from .hooks import Ask

Warn = Callable[[str], None]


class Request(NamedTuple):
    """What `Worktrees.create` was asked for (its arguments, in order)."""

    name: str | None = None
    prompt: str | None = None
    branch: str | None = None
    from_ref: str | None = None
    fetch: bool = True
    hooks: bool = True
    ask: Ask | None = None
    sparse: Sequence[str] | None = None
    pr: int | None = None
    carry: bool = False
    move: bool = False
    host: Host | None = None


def create(root: Root, cwd: str, out: Output, request: Request) -> Created:
    """Create a worktree (or reuse NAME after validating it): the course of `vwt new`.
    What each field of the request means is in `Worktrees.create` (api.py), which
    builds it."""
    from . import create as _create  # only creating pays for it

    name, prompt, branch, from_ref, fetch, hooks, ask, sparse, pr, carry, move, host = request
    warn = out.warn
    if (carry or move) and (pr is not None or sparse):
        raise VwtError("--carry and --move make a full checkout of a new branch; drop "
                       "--pr and --sparse", 2)
    if pr is not None:
        from . import pulls

        number = pulls.check_number(pr)
        name = name if name is not None else pulls.branch_for(number)
        if branch is not None or from_ref is not None or prompt is not None:
            raise VwtError("--pr sets the branch and the start point; drop -b, --from "
                           "and -p", 2)
        from_ref = pulls.start_of(root, cwd, number, name)
        branch = pulls.branch_for(number)

    dirs = None
    if sparse:
        from .sparse import normalise

        dirs = normalise(sparse)

    if hooks and os.path.exists(f"{root.home}/worktree.toml"):
        from .hooks import check_user_file

        check_user_file(root.home)  # broken: fail before anything is created
    plan = None
    if carry or move:
        from . import carry as _carry

        plan = _carry.prepare(cwd, name, branch, from_ref, _made_before(root, cwd, name))
        from_ref, dirs = plan.start, ()
    if name is None and branch is not None:
        raise VwtError("--branch needs a NAME; an automatic name has its own vibe/ branch", 2)
    filling = _carry.Filling(plan, move) if plan else None
    fill = filling.fill if filling else None
    pool = hooks and plan is None  # --no-hooks and carried work never take pool entries
    try:
        if name is not None:
            created = _create.create_named(root, cwd, name, branch, from_ref,
                                           fetch, out, dirs, fill, pool, hooks)
        else:
            created = _create.create_auto(root, cwd, prompt, from_ref, fetch,
                                          out, dirs, fill, pool, hooks)
    except BaseException:
        if filling is not None:
            filling.undo()
        raise
    if plan is not None and filling is not None:
        try:
            made = _carry.Made(created.name, created.path, created.created)
            carried = _carry.finish(plan, made, move, warn, filling)
            created = created._replace(carried=carried)
        finally:
            filling.give_room_back()
    if hooks and (created.created or created.setup_pending):
        created = _post_create(root, created, out.warn, ask, host)
    if pool and created.created:
        _refill(root, created, out.warn)
    return created


def _refill(root: Root, created: Created, warn: Warn) -> None:
    """Start the pool's background filler when this repository has (or wants) a pool;
    never delays the creation (a detached process) and never fails it."""
    from .pool import folder

    has_pool = os.path.isdir(folder(root, created.bucket))
    if not created.pooled and not (has_pool or setup_state.any_hooks_file(
            root.home, created.repo_root, created.repo_root)):
        return
    from . import pool, pool_fill

    try:
        if not created.pooled:
            size = pool.configured_size(root.home, created.repo_root)
            found = pool.contents(root, created.bucket)
            if size == 0 or len(found.ready) >= size or pool.filling(root,
                                                                     created.bucket):
                return
        pool_fill.spawn_refill(root.home, created.repo_root, created.bucket)
    except VwtError as exc:
        warn(f"the pool was not refilled: {exc.message}")


def _made_before(root: Root, cwd: str, name: str | None) -> bool:
    """NAME is a ready worktree already (a `--move` killed after making it)."""
    from .worktrees import READY, load_entry

    entry = load_entry(open_repo(root, cwd).claim(name)) if name else None
    return entry is not None and entry.state == READY


def restore(repo: Repo, name: str, out: Output, hooks: bool, ask: Ask | None) -> Created:
    from .restore import restore as _restore

    created = _restore(repo, name, out, hooks)
    return _post_create(repo.root, created, out.warn, ask) if hooks else created


def _post_create(root: Root, created: Created, warn: Warn, ask: Ask | None,
                 host: Host | None = None) -> Created:
    """The post_create hooks of a new worktree, or those of a reused one that did not
    succeed (SPEC §9). Interrupted, it says what it leaves and how to finish it."""
    if not (created.sparse or created.setup_pending
            or setup_state.any_hooks_file(root.home, created.path, created.repo_root)):
        return created
    try:
        return _run_post_create(root, created, warn, ask, host)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Interrupted)
        raise Interrupted.of(exc, f"{created.name} is left at {created.path} with its "
                                  f"setup unfinished; vwt new {created.name} finishes "
                                  "it") from None


def _run_post_create(root: Root, created: Created, warn: Warn, ask: Ask | None,
                     host: Host | None) -> Created:
    from . import hook_runner as _hooks

    ctx = _hooks.context(root.home, created.bucket, created.name, created.branch,
                         created.path, created.repo_root, created.base_commit, warn=warn,
                         sparse=bool(created.sparse))
    runner = _hooks.Runner(root.home, warn, ask, host)
    claim = root.claim(created.bucket, created.name)
    reuse = None
    if created.taken is not None:  # the pool ran them: again only where inputs changed
        from .pool_take import rerun_decider

        reuse = rerun_decider(created.taken, created.base_commit)
    results = _hooks.run_setup(runner, claim, ctx, bool(created.sparse), reuse,
                               rerun=not created.created)
    return created._replace(hooks=tuple(results),
                            setup_pending=setup_state.still_pending(claim))
