"""A small, long-lived process that starts the measured commands and reports their rusage.

Why not spawn from the harness itself: on Linux a child's `ru_maxrss` also counts the memory
its parent had when it forked (Python's `subprocess` uses vfork, so the parent's whole high-water
mark). The harness holds a 40 MB fast-import stream at times, which would then be reported as
the tool's peak. Forked from this process (a few MiB, started with `-S`), the tool's own peak
dominates. Every timed command, the tool's and the baseline's alike, goes through here.

Protocol: one JSON request per line on stdin, `{"argv", "cwd", "env", "stdout", "stderr"}`
(the last two are file paths); two JSON lines back: `{"pid"}` right after the fork, then
`{"returncode", "seconds", "maxrss"}` once the child is reaped.
"""

import json
import os
import sys
import time
from typing import Any


def child(request: dict[str, Any], out_fd: int, err_fd: int) -> None:
    try:
        os.chdir(request["cwd"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        os.execvpe(request["argv"][0], request["argv"], request["env"])
    except OSError as exc:
        os.write(2, f"spawner: cannot run {request['argv'][0]}: {exc}\n".encode())
    os._exit(127)


def serve_one(request: dict[str, Any]) -> dict[str, Any]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    out_fd = os.open(request["stdout"], flags, 0o600)
    err_fd = os.open(request["stderr"], flags, 0o600)
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        child(request, out_fd, err_fd)
    os.close(out_fd)
    os.close(err_fd)
    print(json.dumps({"pid": pid}), flush=True)
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - start
    return {
        "returncode": os.waitstatus_to_exitcode(status),
        "seconds": seconds,
        "maxrss": usage.ru_maxrss,
    }


def main() -> None:
    for line in sys.stdin:
        print(json.dumps(serve_one(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
