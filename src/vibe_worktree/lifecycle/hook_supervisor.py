"""`python -m vibe_worktree.lifecycle.hook_supervisor TIMEOUT COMMAND [ROOT BUCKET NAME FD]`:
a background hook's keeper.

Started detached by `vwt new` with the worktree's holder file open (and locked) on an
inherited descriptor FD, so the worktree stays held exactly as long as this process lives.
It runs COMMAND with `sh -c` in a process group of its own, kills that whole group at
TIMEOUT, and writes how the hook ended into the log (its stdout and stderr). When the hook
ends, it deletes that holder file (under the registry lock) before it lets go of it: a
finished hook leaves no stale holder behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def main(argv: list[str]) -> int:
    try:
        return _supervise(float(argv[0]), argv[1])
    finally:
        if len(argv) >= 6:
            _let_go(argv[2], argv[3], argv[4], int(argv[5]))


def _let_go(root: str, bucket: str, name: str, fd: int) -> None:
    from vibe_worktree.core.layout import Claim, Root
    from vibe_worktree.core.locks import let_go_inherited

    try:
        let_go_inherited(Claim(Root(os.path.dirname(root), root), bucket, name), fd)
    except OSError as exc:  # the kernel drops the lock anyway when this process ends
        print(f"[vwt] {_stamp()} could not delete the holder file: {exc}", flush=True)


def _supervise(timeout: float, command: str) -> int:
    # The hook itself does not inherit the holder descriptor: a daemon it leaves behind
    # must not hold the worktree forever.
    child = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL,
                             start_new_session=True, close_fds=True)
    try:
        code = child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        print(f"[vwt] {_stamp()} timed out after {timeout:g} s; its processes were killed",
              flush=True)
        return 124
    print(f"[vwt] {_stamp()} exited with status {code}", flush=True)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
