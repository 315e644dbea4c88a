"""The board's routes: one page, its own assets, a JSON API and a live stream.

Every route sits behind `security.Guard`. Reads are GET; every change is a POST to
`/api/<action>`. The page is one HTML file of ours in which the JavaScript renders all
data with `textContent`, so no name, path or diff is ever parsed as HTML.
"""

from __future__ import annotations

import asyncio
import html
import json
import sys
import time
from collections.abc import AsyncIterator, Callable
from importlib import resources
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from ..api import Worktrees
from ..core.errors import VwtError
from . import actions, model
from .security import Guard, Secrets

REFRESH_SECONDS = 1.0  # live list: re-read this often while a page is open
KEEPALIVE_SECONDS = 15.0
COLLISIONS_SECONDS = (5.0, 30.0)  # forecast again after a change, at most / at least this often
ASSETS = {  # the only files ever served: name -> content type
    "board.js": "text/javascript; charset=utf-8",
    "board.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


def _asset(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


def json_response(data: object, status: int = 200) -> Response:
    # ensure_ascii: a file name that is not UTF-8 travels as an escape, never raw bytes
    return Response(json.dumps(data, ensure_ascii=True), status,
                    media_type="application/json")


class Live:
    """The list of worktrees as last read, re-read only while some page watches it.

    One refresher for all open pages; a page is sent the list only when it changed,
    so an idle board sends nothing but a keep-alive now and then.
    """

    def __init__(self, compute: Callable[[], str], period: float = REFRESH_SECONDS) -> None:
        self._compute = compute
        self._period = period
        self._watchers = 0
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self._lock = asyncio.Lock()
        self.version = 0
        self.payload = ""
        self.stopping = False

    async def refresh(self) -> None:
        async with self._lock:
            payload = await anyio.to_thread.run_sync(self._compute)
            if payload != self.payload:
                self.payload = payload
                self.version += 1
                self._changed.set()
                self._changed = asyncio.Event()

    async def _refresh_while_watched(self) -> None:
        try:
            while self._watchers and not self.stopping:
                started = time.monotonic()
                try:
                    await self.refresh()
                except Exception as exc:  # a failing read must not end the stream
                    print(f"vwt: warning: board refresh failed: {exc}", file=sys.stderr)
                spent = time.monotonic() - started
                # Once a second; a slow read (hundreds of worktrees) rests half as long as it
                # took, so a change still shows within about two reads and the CPU is not
                # kept busy.
                await asyncio.sleep(max(self._period - spent, spent / 2, 0.2))
        finally:
            self._task = None

    async def stream(self) -> AsyncIterator[str]:
        self._watchers += 1
        if self._task is None:
            self._task = asyncio.create_task(self._refresh_while_watched())
        try:
            seen = 0
            quiet = 0.0
            while not self.stopping:
                if self.version != seen:
                    seen = self.version
                    quiet = 0.0
                    yield f"event: worktrees\ndata: {self.payload}\n\n"
                changed = self._changed
                try:  # short waits: a Ctrl-C ends every stream within half a second
                    await asyncio.wait_for(changed.wait(), 0.5)
                except TimeoutError:
                    quiet += 0.5
                    if quiet >= KEEPALIVE_SECONDS:
                        quiet = 0.0
                        yield ": keep-alive\n\n"
        finally:
            self._watchers -= 1


class Board:
    """What the routes share: the home, the secrets and the live list."""

    def __init__(self, home: str, keys: Secrets) -> None:
        self.home = home
        self.keys = keys
        self.live = Live(self._read_list)
        self.page = _asset("board.html").decode()
        self._marks: dict[tuple[str, str], dict[str, object]] = {}
        self._marked_at = -1e9
        self._marked_rows = ""

    def _read_list(self) -> str:
        wt = Worktrees(home=self.home, warn=lambda _message: None)
        rows = model.rows(wt)
        marks = self._collisions(wt, rows)
        inside = self._running(wt)
        for row in rows:
            row["collisions"] = marks.get((str(row["bucket"]), str(row["name"])))
            row["running"] = inside.get((str(row["bucket"]), str(row["name"])))
        return json.dumps({"home": wt.root.home, "can_merge": hasattr(wt, "merge"),
                           "can_land": hasattr(wt, "land"), "worktrees": rows},
                          ensure_ascii=True)

    @staticmethod
    def _running(wt: Worktrees) -> dict[tuple[str, str], dict[str, object]]:
        """What runs in each worktree: one look at the process table, every refresh (a few
        milliseconds), so a server started or stopped shows within the next one."""
        try:
            return model.running(wt)
        except (VwtError, OSError) as exc:
            print(f"vwt: warning: reading the processes failed: {exc}", file=sys.stderr)
            return {}

    def _collisions(self, wt: Worktrees, rows: list[dict[str, object]]
                    ) -> dict[tuple[str, str], dict[str, object]]:
        """The collision forecast costs a merge per overlapping pair: it is redone only when
        the rows changed (at most every 5 s), and every 30 s in any case."""
        seen = json.dumps(rows, ensure_ascii=True)
        age = time.monotonic() - self._marked_at
        soonest, latest = COLLISIONS_SECONDS
        if age >= latest or (seen != self._marked_rows and age >= soonest):
            try:
                self._marks = model.collisions(wt)
            except VwtError as exc:
                print(f"vwt: warning: collision forecast failed: {exc.message}",
                      file=sys.stderr)
                self._marks = {}
            self._marked_at, self._marked_rows = time.monotonic(), seen
        return self._marks

    async def page_view(self, request: Request) -> Response:
        page = self.page.replace("{{csrf}}", html.escape(self.keys.new_page_token()))
        page = page.replace("{{home}}", html.escape(self.home))
        return Response(page, media_type="text/html; charset=utf-8")

    async def asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return PlainTextResponse("not found\n", 404)
        return Response(_asset(name), media_type=ASSETS[name])

    async def worktrees(self, request: Request) -> Response:
        if not self.live.payload:
            await self.live.refresh()
        return Response(self.live.payload, media_type="application/json")

    async def events(self, request: Request) -> Response:
        return StreamingResponse(self.live.stream(), media_type="text/event-stream",
                                 headers={"x-accel-buffering": "no"})

    async def detail(self, request: Request) -> Response:
        bucket, name = request.path_params["bucket"], request.path_params["name"]
        wt = Worktrees(home=self.home, warn=lambda _message: None)
        try:
            data = await anyio.to_thread.run_sync(model.detail, wt, bucket, name)
        except VwtError as exc:
            return json_response({"error": exc.message}, 404 if exc.exit_code == 1 else 400)
        return json_response(data)

    async def act(self, request: Request) -> Response:
        action = request.path_params["action"]
        try:
            body: Any = json.loads(await request.body())
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return json_response(actions.Outcome(actions.ERROR, "bad request: send a JSON "
                                                 "object").to_json(), 400)
        outcome = await anyio.to_thread.run_sync(actions.run, self.home, action, body)
        await self.live.refresh()  # the page shows the action's effect at once
        status = 404 if action not in actions.ACTIONS else 200
        return json_response(outcome.to_json(), status)


def build(home: str, keys: Secrets) -> tuple[Guard, Board]:
    board = Board(home, keys)
    routes = [
        Route("/", board.page_view),
        Route("/worktree/{bucket}/{name}", board.page_view),
        Route("/static/{name}", board.asset),
        Route("/api/worktrees", board.worktrees),
        Route("/api/events", board.events),
        Route("/api/worktree/{bucket}/{name}", board.detail),
        Route("/api/{action}", board.act, methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    app.router.redirect_slashes = False  # an unknown path is a 404, never a redirect
    return Guard(app, keys), board
