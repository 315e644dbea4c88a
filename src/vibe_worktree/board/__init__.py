"""`vwt board`: a local web page over every managed worktree (SPEC §10).

- `security`: the gate every request passes (token, Host, origin, CSRF, body size).
- `model`: what the page shows (rows across repositories, one worktree's detail).
- `actions`: snapshot, remove, merge, restore and prune through the Python API.
- `app`: the Starlette routes, the live stream and the package's own assets.
- `server`: binding 127.0.0.1, printing the URL, opening the browser, stopping.

Needs the `board` extra (Starlette and uvicorn); nothing here is imported on `vwt`'s
start-up path: the CLI imports `board.server` inside the `board` command only.
"""
