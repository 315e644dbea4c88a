"""What runs in a worktree: port.
"""

from __future__ import annotations

from ..core.errors import EXIT_OK
from .output import print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ..api import Worktrees


def cmd_port(wt: Worktrees, ns: argparse.Namespace) -> int:
    from ..core.names import validate_name
    from ..core.ports import worktree_port

    validate_name(ns.name, as_branch=False)
    bucket = wt.repo.bucket
    port = worktree_port(wt.root.home, bucket, ns.name)
    if ns.json:
        print_json({"name": ns.name, "bucket": bucket, "port": port})
    else:
        print(port)
    return EXIT_OK
