"""`python tests/land_driver.py [NAME...] [--ready] ...`: `vwt land` until the command is wired.

Calls `vibe_worktree.landing.land` as the CLI will, and prints what it will print: one line
per worktree as it finishes (or, with --json, the document).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from vibe_worktree.core.errors import VwtError
from vibe_worktree.core.layout import Root, resolve_home
from vibe_worktree.landing.land import LandResult, Output, Request, land
from vibe_worktree.lifecycle.worktrees import open_repo


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("names", nargs="*")
    p.add_argument("--ready", action="store_true")
    p.add_argument("--into")
    p.add_argument("--gate")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--no-wait", action="store_true")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--json", action="store_true")
    ns = p.parse_args(argv)
    root = Root.at(resolve_home())
    try:
        repo = open_repo(root, os.getcwd())
        names = tuple(ns.names)
        if not names and not ns.ready:
            top = os.path.relpath(repo.info.toplevel, root.path).split(os.sep)
            names = (top[1],)

        def done(result: LandResult) -> None:
            print(describe(result, report_into[0]), file=sys.stderr if ns.json else sys.stdout,
                  flush=True)

        def say(message: str) -> None:
            print(f"vwt: {message}", file=sys.stderr, flush=True)

        from vibe_worktree.core.integration import read_tips

        tips = read_tips(repo.git, ns.into)
        report_into = [tips.branch if tips else ""]
        request = Request(names, ns.ready, ns.into, ns.gate, ns.keep, not ns.no_wait,
                          ns.dry_run)
        report = land(repo, request, Output(say, say, done))
    except VwtError as exc:
        print(f"vwt: error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    if ns.json:
        print(json.dumps(report.to_json(), indent=2))
    elif not ns.dry_run:
        print(summary(report))
    else:
        for planned in report.plan:
            print(planned.name)
    return report.exit_code


def describe(result: LandResult, into: str) -> str:
    """One line for a person, as the worktree finishes."""
    head = f"{result.outcome:<15} {result.name}"
    if result.outcome == "merged":
        what = [f"attempt {result.attempts}"] if result.attempts > 1 else []
        if result.gate is not None:
            what.append(f"gate {result.gate.seconds:.1f} s")
        what.append("worktree removed" if result.removed else "worktree kept")
        return f"{head}: into {into} at {(result.commit or '')[:12]} ({', '.join(what)})"
    if result.outcome == "up_to_date":
        gone = ", worktree removed" if result.removed else ""
        return f"{head}: already in {into}{gone}"
    return f"{head}: {result.message}"


def summary(report) -> str:  # type: ignore[no-untyped-def]
    landed = [r for r in report.results if r.landed]
    others = [f"{r.name} ({r.outcome})" for r in report.results if not r.landed]
    line = f"landed {len(landed)} of {len(report.results)} on {report.into}"
    return line + (f"; not landed: {', '.join(others)}" if others else "")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
