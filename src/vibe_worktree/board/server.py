"""Serve the board on 127.0.0.1 until Ctrl-C (or SIGTERM), then stop cleanly."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from types import FrameType

import uvicorn

from ..api import Worktrees
from ..core.errors import VwtError
from . import app as board_app
from .security import Secrets


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 only (port 0: one the system picks)."""
    if not 0 <= port <= 65535:
        raise VwtError(f"--port {port} is not a TCP port (0-65535)", 2)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise VwtError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}; "
                       "pick another with --port") from None
    sock.listen(64)
    return sock


def has_display() -> bool:
    if sys.platform == "darwin":
        return not os.environ.get("SSH_CONNECTION")
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _open_browser(url: str) -> None:
    import webbrowser

    try:
        webbrowser.open(url)
    except webbrowser.Error:
        pass


class Server(uvicorn.Server):
    """uvicorn's server, ending the live streams as soon as a stop is asked."""

    def __init__(self, config: uvicorn.Config, board: board_app.Board) -> None:
        super().__init__(config)
        self.board = board

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.board.live.stopping = True
        super().handle_exit(sig, frame)


def serve(wt: Worktrees, port: int, open_browser: bool) -> int:
    sock = bind(port)
    keys = Secrets(sock.getsockname()[1])
    guarded, board = board_app.build(wt.root.home, keys)
    config = uvicorn.Config(
        guarded, log_level="warning", access_log=False, lifespan="off", ws="none",
        http="h11", server_header=False, timeout_graceful_shutdown=2, limit_concurrency=64,
    )
    server = Server(config, board)

    def stop(_signum: int, _frame: FrameType | None) -> None:
        # A flag, not an exception: a SIGTERM that lands while asyncio is still building
        # its loop would leave a half-made loop whose finaliser prints a traceback.
        server.should_exit = True

    previous = signal.signal(signal.SIGTERM, stop)
    try:  # a Ctrl-C at any moment from here on is a clean stop
        sys.stdout.write(keys.url + "\n")
        sys.stdout.flush()
        print("vwt: board is serving; Ctrl-C stops it", file=sys.stderr, flush=True)
        if open_browser and has_display():
            threading.Timer(0.3, _open_browser, (keys.url,)).start()
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises the signal it stopped for, once it has stopped
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
    print("vwt: board stopped", file=sys.stderr, flush=True)
    return 0
