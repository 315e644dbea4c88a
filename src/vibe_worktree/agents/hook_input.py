"""One JSON object from a hook's stdin, read without waiting for end of file.

A host may keep the pipe open after writing its input (Claude Code's is a socket it
never shuts down), so reading to EOF could hang the hook for good. The object is
complete when its braces balance outside strings; it is parsed then, and what follows
is never read.
"""

from __future__ import annotations

import json
import os
import time

from ..core.errors import VwtError

TIMEOUT = 10.0  # seconds for the whole object to arrive
TIMEOUT_ENV = "VWT_HOOK_STDIN_TIMEOUT"  # a shorter wait, for the tests of a silent host
MAX_BYTES = 1 << 22


HOOK_JSON = "Claude Code's hook JSON"


class NoInput(VwtError):
    """Nothing but white space arrived on stdin (it ended, or stayed silent)."""


class _Scanner:
    """Finds where the first top-level JSON object ends, fed a chunk at a time."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.started = False
        self.position = 0

    def feed(self, data: bytes) -> int | None:
        """The end of the object (an index into everything fed so far), or None."""
        for byte in data:
            self.position += 1
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif byte == 0x5C:  # backslash
                    self.escaped = True
                elif byte == 0x22:  # quote
                    self.in_string = False
                continue
            if not self.started:
                if byte in b" \t\r\n":
                    continue
                if byte != 0x7B:  # "{"
                    raise VwtError(f"stdin does not hold a JSON object; expected {self.what}")
                self.started = True
            if byte == 0x22:
                self.in_string = True
            elif byte in b"{[":
                self.depth += 1
            elif byte in b"}]":
                self.depth -= 1
                if self.depth == 0:
                    return self.position
        return None


def read_object(fd: int = 0, timeout: float | None = None, what: str = HOOK_JSON
                ) -> dict[str, object]:
    """The first JSON object on `fd`; VwtError when it is malformed or late, NoInput when
    nothing came at all. `what`: the input expected, for the messages."""
    import select

    if timeout is None:
        timeout = float(os.environ.get(TIMEOUT_ENV) or TIMEOUT)
    scanner = _Scanner(what)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            late = NoInput if not scanner.started else VwtError
            raise late(f"no complete JSON object arrived on stdin within {timeout:g} s; "
                       f"expected {what}")
        try:
            data = os.read(fd, 1 << 16)
        except OSError as exc:
            raise VwtError(f"cannot read the hook input on stdin: {exc.strerror}") from None
        if not data:
            if not scanner.started:
                raise NoInput(f"stdin ended with no input; expected {what}")
            raise VwtError(f"stdin ended with an incomplete JSON object; expected {what}")
        chunks.append(data)
        end = scanner.feed(data)
        if end is not None:
            return _parse(b"".join(chunks)[:end], what)
        if scanner.position > MAX_BYTES:
            raise VwtError(f"the hook input is larger than {MAX_BYTES} bytes")


def _parse(raw: bytes, what: str) -> dict[str, object]:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise VwtError(f"stdin does not hold valid JSON ({exc}); expected {what}") from None
    if not isinstance(data, dict):  # pragma: no cover - the scanner saw a "{"
        raise VwtError(f"stdin does not hold a JSON object; expected {what}")
    return data


def close_stdin() -> None:
    """Let go of the host's pipe: what follows the object is never read, and no child
    of ours inherits it."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
