"""`python -m vibe_worktree.lifecycle.hook_supervisor TIMEOUT COMMAND`: a background hook's keeper.

Started detached by `vwt new` with the worktree's holder file open (and locked) on an
inherited descriptor, so the worktree stays held exactly as long as this process lives.
It runs COMMAND with `sh -c` in a process group of its own, kills that whole group at
TIMEOUT, and writes how the hook ended into the log (its stdout and stderr).
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
    timeout, command = float(argv[0]), argv[1]
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
