"""Fixtures of the board's tests: the real `vwt board` process and a real Chromium.

``board``    starts ``vwt board --no-open --port 0`` in the sandbox and reads its URL;
             ``board.request(...)`` speaks plain HTTP to it (http.client, no browser);
             at the end it is stopped with Ctrl-C (SIGINT) and must exit 0.
``page``     a Chromium page (Playwright, Debian's /usr/bin/chromium) already on the board;
             every request it makes is recorded, and any to a host other than 127.0.0.1
             is blocked and fails the test.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import selectors
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from conftest import Vwt

CHROMIUM = os.environ.get("VWT_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
URL_PATTERN = re.compile(r"^http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]+)$")


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


@dataclass
class BoardProcess:
    proc: subprocess.Popen[str]
    url: str
    port: int
    token: str
    responses: list[Response] = field(default_factory=list)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def cookie(self) -> str:
        return f"vwt_board_{self.port}={self.token}"

    def request(self, method: str, path: str, *, headers: dict[str, str] | None = None,
                body: bytes | None = None, host: str | None = "default",
                cookie: bool = True) -> Response:
        """One plain HTTP request; `host=None` sends none, `cookie` the board's cookie."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        if host is not None:
            connection.putheader("Host", f"127.0.0.1:{self.port}" if host == "default" else host)
        if cookie:
            connection.putheader("Cookie", self.cookie)
        for key, value in (headers or {}).items():
            connection.putheader(key, value)
        if body is not None and "Content-Length" not in (headers or {}):
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        raw = connection.getresponse()
        response = Response(raw.status, raw.getheaders(), raw.read())
        connection.close()
        self.responses.append(response)
        return response

    def page_token(self) -> str:
        page = self.request("GET", "/").text
        found = re.search(r'name="vwt-csrf" content="([^"]+)"', page)
        assert found, page
        return found.group(1)

    def post(self, action: str, data: dict[str, Any], *, csrf: str | None = None,
             headers: dict[str, str] | None = None) -> Response:
        """A POST as the page sends it (own origin, JSON, the page's CSRF token)."""
        sent = {"Origin": self.origin, "Content-Type": "application/json",
                "X-Vwt-Csrf": csrf if csrf is not None else self.page_token()}
        sent.update(headers or {})
        return self.request("POST", f"/api/{action}", headers=sent,
                            body=json.dumps(data).encode())

    def stop(self) -> tuple[int, str]:
        """Ctrl-C, as a person would; the exit status and what it said on stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        _out, err = self.proc.communicate(timeout=15)
        return self.proc.returncode, err


def _first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            proc.kill()
            raise AssertionError(f"vwt board printed no URL: {proc.communicate()[1]}")
    return proc.stdout.readline().strip()


def start_board(vwt: Vwt, *args: str) -> BoardProcess:
    proc = vwt.spawn("board", "--no-open", *args,
                     env_extra={"DISPLAY": None, "WAYLAND_DISPLAY": None})
    url = _first_line(proc, 30)
    found = URL_PATTERN.match(url)
    assert found, f"unexpected URL line {url!r}"
    return BoardProcess(proc, url, int(found.group(1)), found.group(2))


@pytest.fixture
def board(vwt: Vwt) -> Iterator[BoardProcess]:
    started = start_board(vwt, "--port", "0")
    yield started
    code, err = started.stop()
    assert code == 0, err
    assert "Traceback" not in err, err
    for response in started.responses:
        assert not [k for k, _ in response.headers if k.lower().startswith("access-control-")]


# Per module, not per session: Playwright's sync API keeps an event loop running while it
# is started, and other modules' tests (the MCP client's) call asyncio.run().
@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@dataclass
class PageOnBoard:
    page: Any
    board: BoardProcess
    requested: list[str]
    dialogs: list[str]
    errors: list[str]

    def goto(self, path: str = "/") -> None:
        self.page.goto(self.board.origin + path)


@pytest.fixture
def page(chromium: Any, board: BoardProcess) -> Iterator[PageOnBoard]:
    context = chromium.new_context(viewport={"width": 1280, "height": 720})
    requested: list[str] = []
    dialogs: list[str] = []
    errors: list[str] = []

    def only_the_board(route: Any) -> None:
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            route.abort()

    context.route("**/*", only_the_board)
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    tab.on("request", lambda request: requested.append(request.url))
    tab.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(board.url)
    on_board = PageOnBoard(tab, board, requested, dialogs, errors)
    yield on_board
    context.close()
    foreign = {url for url in requested if urlsplit(url).hostname != "127.0.0.1"}
    assert not foreign, f"the page asked other hosts: {sorted(foreign)}"
    assert not errors, errors
    assert not dialogs, f"a script opened a dialog: {dialogs}"
