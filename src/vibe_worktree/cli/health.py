"""The home's health and the documents' shapes: doctor, schema.
"""

from __future__ import annotations

import sys

from ..core.errors import EXIT_OK
from .output import error, print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ..api import Worktrees


def schema_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="a command (new, list, ...) or mcp-TOOL; without it, list the names")


def cmd_schema(_wt: Worktrees, ns: argparse.Namespace) -> int:
    from .. import schema

    sys.stdout.write(schema.text(ns.name) if ns.name is not None else "".join(
        f"{name}\n" for name in schema.names()))
    return EXIT_OK


def doctor_args(p: argparse.ArgumentParser) -> None:
    repair = p.add_mutually_exclusive_group()
    repair.add_argument("--archive-orphans", action="store_true",
                        help="archive each checkout whose repository is gone into "
                             "<root>/.orphans/<bucket>-<name>.tar.gz, then drop its claim")
    repair.add_argument("--relocate", action="store_true",
                        help="inside a moved repository: move its worktrees into its new "
                             "bucket and repair git's links (deletes nothing)")


def cmd_doctor(wt: Worktrees, ns: argparse.Namespace) -> int:
    if ns.archive_orphans or ns.relocate:
        done = wt.archive_orphans() if ns.archive_orphans else wt.relocate()
        key = "archived" if ns.archive_orphans else "relocated"
        failed = [r for r in done if r.outcome == "failed"]
        if ns.json:
            print_json({key: [r.to_json() for r in done]})
        else:
            for r in done:
                if r.outcome != "failed":
                    print(f"{r.outcome} {r.bucket}/{r.name}: {r.path}"
                          + (f" ({r.detail})" if r.detail else ""))
            if not done:
                print(f"vwt: nothing to {'archive' if ns.archive_orphans else 'relocate'}",
                      file=sys.stderr)
        verb = "archive" if ns.archive_orphans else "relocate"
        for r in failed:  # an error is said on stderr (SPEC §5), with or without --json
            error(f"could not {verb} {r.bucket}/{r.name} ({r.path}): {r.detail}")
        return 1 if failed else 0
    report = wt.doctor()
    if ns.json:
        print_json(report.to_json())
    elif report.healthy:
        print("healthy")
    else:
        for p in report.problems:
            where = f"{p.bucket}/{p.name}" if p.bucket and p.name else p.bucket or p.path
            print(f"{p.kind}  {where}: {p.detail}\n    fix: {p.fix}")
    return 0 if report.healthy else 1
