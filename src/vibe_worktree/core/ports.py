"""A stable port per worktree: the same bucket and name always give the same number.

Derived, not allocated: nothing is stored, so two tools (or two machines) agree
without coordination. Two names can collide in a small range; a server that
needs certainty should still fall back when the port is taken.
"""

from __future__ import annotations

from .config import port_range

try:  # the builtin module avoids loading OpenSSL, which `hashlib` does
    from _sha256 import sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import sha256

PORT_ENV = "VWT_PORT"


def port_for(bucket: str, name: str, low: int, high: int) -> int:
    digest = sha256(f"{bucket}/{name}".encode()).hexdigest()
    return low + int(digest[:16], 16) % (high - low + 1)


def worktree_port(home: str, bucket: str, name: str) -> int:
    """The port of NAME in `bucket`, in `port_range` of `<home>/config.toml`."""
    low, high = port_range(home)
    return port_for(bucket, name, low, high)
