"""A stand-in for Claude Code: runs `vwt hook claude-code` through `sh -c` as Claude Code
does, with the payload on stdin, then lives on until it is killed.

    python fake_host.py VWT PAYLOAD_FILE open|close [OUTDIR]

Prints one JSON line {code, out, err} once the hook's stdout and stderr have both reached
end of file (a process of ours keeping them open would hang it here), then sleeps.

With OUTDIR the hook's stdout and stderr go to OUTDIR/out and OUTDIR/err, and its exit
status to OUTDIR/code once it ends (the shell that ran it writes it, so it is known even
after this host is killed); the JSON line, {code: null, ...}, is printed at once.
"""

import json
import signal
import subprocess
import sys
import threading


def main() -> None:
    vwt, payload_file, mode = sys.argv[1:4]
    with open(payload_file, "rb") as f:
        payload = f.read()
    if len(sys.argv) > 4:
        detached(vwt, payload, sys.argv[4])
    hook = subprocess.Popen(["/bin/sh", "-c", f"'{vwt}' hook claude-code"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert hook.stdin is not None and hook.stdout is not None and hook.stderr is not None
    hook.stdin.write(payload)
    hook.stdin.flush()
    if mode == "close":
        hook.stdin.close()
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: err.append(hook.stderr.read()))  # type: ignore[union-attr]
    reader.start()
    out = hook.stdout.read()
    reader.join()
    code = hook.wait()
    print(json.dumps({"code": code, "out": out.decode(), "err": err[0].decode()}), flush=True)
    signal.pause()


def detached(vwt: str, payload: bytes, outdir: str) -> None:
    script = (f"o='{outdir}'; '{vwt}' hook claude-code >\"$o/out\" 2>\"$o/err\"; "
              'echo $? >"$o/code.tmp" && mv "$o/code.tmp" "$o/code"')
    hook = subprocess.Popen(["/bin/sh", "-c", script], stdin=subprocess.PIPE)
    assert hook.stdin is not None
    hook.stdin.write(payload)
    hook.stdin.close()
    print(json.dumps({"code": None, "out": "", "err": ""}), flush=True)
    signal.pause()


if __name__ == "__main__":
    main()
