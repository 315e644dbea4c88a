"""Holding back Ctrl-C and SIGTERM over a step that must not be cut in two."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def stops_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM that arrive inside the block are delivered as it ends: a step that
    takes something (a ticket, a hold) and hands it to the caller's cleanup cannot be
    stopped between the two."""
    stops = {signal.SIGINT, signal.SIGTERM}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
