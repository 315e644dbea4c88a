"""Many idle processes, each with its current directory in a given folder, some holding a
listening TCP socket: the machine `vwt ps` is measured on.

Protocol: a JSON list on stdin, `[{"cwd": PATH, "port": PORT or null}, ...]`. Each entry
becomes a `sleep` whose current directory is `cwd`; with a port, it inherits a socket
listening on 127.0.0.1:PORT (bound here, so a taken port fails before anything starts).
Prints `ready` once all run; they are all in this process's group, which the caller
kills when it is done.
"""

import json
import os
import signal
import socket
import sys

SLEEP = "/bin/sleep" if os.path.exists("/bin/sleep") else "/usr/bin/sleep"


def start(cwd: str, port: int | None) -> None:
    listener = None
    if port is not None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen()
        listener.set_inheritable(True)
    if os.fork() == 0:
        try:
            os.chdir(cwd)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.execv(SLEEP, [SLEEP, "3600"])
        finally:
            os._exit(127)
    if listener is not None:
        listener.close()


def main() -> None:
    for item in json.load(sys.stdin):
        start(item["cwd"], item["port"])
    print("ready", flush=True)
    signal.pause()


if __name__ == "__main__":
    main()
