"""The gate in front of the board: nothing reaches a route unless it passes here.

Modelled on Jupyter's server: a random token in the first URL, then a cookie; the
`Host` header checked against the port we bound (DNS rebinding); every state change a
POST carrying a per-page CSRF token from our own origin. A pure ASGI middleware, so a
refusal never depends on how a route is written.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_BYTES = 32  # 256 bits, above the spec's 128
MAX_BODY = 64 * 1024  # an action's JSON is a few hundred bytes
CSRF_HEADER = "x-vwt-csrf"
CSRF_PAGES = 256  # page tokens remembered; an older page is asked to reload
SECURITY_HEADERS = [
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
     b"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


class Secrets:
    """The start's token and the CSRF tokens of the pages served so far."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.token = secrets.token_urlsafe(TOKEN_BYTES)
        self.cookie_name = f"vwt_board_{port}"  # cookies ignore ports: one name per board
        self.hosts = (f"127.0.0.1:{port}", f"localhost:{port}")
        self._pages: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def token_matches(self, value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(), self.token.encode())

    def new_page_token(self) -> str:
        token = secrets.token_urlsafe(TOKEN_BYTES)
        with self._lock:
            self._pages[token] = None
            while len(self._pages) > CSRF_PAGES:
                self._pages.popitem(last=False)
        return token

    def page_token_matches(self, value: str | None) -> bool:
        if not value:
            return False
        with self._lock:
            known = list(self._pages)
        return any(hmac.compare_digest(value.encode(), t.encode()) for t in known)


class Refusal(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _headers(scope: Scope) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for key, value in scope.get("headers", []):
        found.setdefault(key.decode("latin-1").lower(), []).append(value.decode("latin-1"))
    return found


def _one(headers: dict[str, list[str]], name: str) -> str | None:
    values = headers.get(name, [])
    if len(values) > 1:
        raise Refusal(400, f"bad request: more than one {name} header")
    return values[0] if values else None


def _cookie(headers: dict[str, list[str]], name: str) -> str | None:
    for line in headers.get("cookie", []):
        for part in line.split(";"):
            key, _, value = part.strip().partition("=")
            if key == name:
                return value
    return None


class Guard:
    """ASGI middleware applying §10's rules to every HTTP request."""

    def __init__(self, app: ASGIApp, keys: Secrets) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websockets: uvicorn runs with ws="none" anyway
            return
        try:
            set_cookie = self._admit(scope)
            if scope["method"] == "POST":
                receive = await self._bounded_body(scope, receive)
        except Refusal as refusal:
            await refuse(send, refusal.status, refusal.reason)
            return
        await self.app(scope, receive, _with_headers(send, self.keys, set_cookie))

    def _admit(self, scope: Scope) -> bool:
        """Raise Refusal unless the request may proceed; True when it brought the token
        in its query (the response then sets the cookie)."""
        headers = _headers(scope)
        host = _one(headers, "host")
        if host not in self.keys.hosts:
            raise Refusal(403, "forbidden: the board answers only to "
                               f"127.0.0.1:{self.keys.port} and localhost:{self.keys.port}")
        method = scope["method"]
        from_cookie = self.keys.token_matches(_cookie(headers, self.keys.cookie_name))
        from_query = False
        if not from_cookie and method in ("GET", "HEAD"):
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            from_query = self.keys.token_matches((query.get("token") or [None])[-1])
        if not (from_cookie or from_query):
            raise Refusal(403, "forbidden: open the board with the URL `vwt board` printed "
                               "(it carries the token)")
        if method in ("GET", "HEAD"):
            return from_query
        if method != "POST":
            raise Refusal(405, f"method not allowed: {method}")
        self._check_post(headers, host)
        return False

    def _check_post(self, headers: dict[str, list[str]], host: str) -> None:
        if _one(headers, "origin") != f"http://{host}":
            raise Refusal(403, "forbidden: a change must come from the board's own page")
        site = _one(headers, "sec-fetch-site")
        if site is not None and site != "same-origin":
            raise Refusal(403, "forbidden: a change must come from the board's own page")
        content_type = (_one(headers, "content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise Refusal(415, "unsupported media type: send application/json")
        if not self.keys.page_token_matches(_one(headers, CSRF_HEADER)):
            raise Refusal(403, "forbidden: the page's CSRF token is missing or stale; "
                               "reload the page")
        length = _one(headers, "content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            raise Refusal(413, f"request body too large (at most {MAX_BODY} bytes)")

    async def _bounded_body(self, scope: Scope, receive: Receive) -> Receive:
        """Read the whole body (at most MAX_BODY bytes) and hand it on in one message."""
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise Refusal(400, "bad request: the client went away")
            body += message.get("body", b"")
            if len(body) > MAX_BODY:
                raise Refusal(413, f"request body too large (at most {MAX_BODY} bytes)")
            if not message.get("more_body"):
                break
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        return replay


def _with_headers(send: Send, keys: Secrets, set_cookie: bool) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", [])
                       if not k.lower().startswith(b"access-control-")]
            headers += SECURITY_HEADERS
            if set_cookie:
                cookie = f"{keys.cookie_name}={keys.token}; HttpOnly; SameSite=Strict; Path=/"
                headers.append((b"set-cookie", cookie.encode()))
            message = {**message, "headers": headers}
        await send(message)
    return sending


async def refuse(send: Send, status: int, reason: str) -> None:
    body = (reason + "\n").encode()
    await send({
        "type": "http.response.start", "status": status,
        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()), *SECURITY_HEADERS],
    })
    await send({"type": "http.response.body", "body": body})
