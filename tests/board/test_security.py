"""Every refusal of §10, spoken in plain HTTP to the real `vwt board` process.

docs/board.md lists these refusals; each has a test here.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import start_board


@pytest.fixture
def worktree(repo, vwt):
    return vwt.new("feature")


def _snapshot_ref_exists(repo, name: str) -> bool:
    return repo.git_ok("rev-parse", "--verify", "--quiet", f"refs/vibe/reaped/{name}")


# -- the token ----------------------------------------------------------------------------------
def test_url_carries_a_fresh_token_of_at_least_128_bits(vwt, board):
    other = start_board(vwt)
    try:
        assert other.token != board.token
        for token in (board.token, other.token):
            assert len(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))) >= 16
    finally:
        assert other.stop()[0] == 0


def test_request_without_the_token_is_refused(board):
    for path in ("/", "/api/worktrees", "/api/events", "/static/board.js",
                 "/worktree/b/n", "/no-such-page"):
        response = board.request("GET", path, cookie=False)
        assert response.status == 403, path
        assert b"token" in response.body
        assert response.header("set-cookie") is None


def test_a_wrong_token_is_refused_in_the_query_and_in_the_cookie(board):
    assert board.request("GET", "/?token=" + "A" * 43, cookie=False).status == 403
    forged = {"Cookie": f"vwt_board_{board.port}={'A' * 43}"}
    assert board.request("GET", "/", headers=forged, cookie=False).status == 403


def test_the_query_token_once_then_an_httponly_strict_cookie(board):
    first = board.request("GET", f"/?token={board.token}", cookie=False)
    assert first.status == 200
    cookie = first.header("set-cookie")
    assert cookie is not None
    parts = [p.strip() for p in cookie.split(";")]
    assert parts[0] == f"vwt_board_{board.port}={board.token}"
    assert "HttpOnly" in parts and "SameSite=Strict" in parts
    again = board.request("GET", "/api/worktrees")  # the cookie alone
    assert again.status == 200 and again.header("set-cookie") is None


def test_the_token_in_a_query_does_not_authorise_a_post(board, worktree, repo):
    csrf = board.page_token()
    response = board.request(
        "POST", f"/api/snapshot?token={board.token}", cookie=False,
        headers={"Origin": board.origin, "Content-Type": "application/json", "X-Vwt-Csrf": csrf},
        body=json.dumps({"bucket": worktree["bucket"], "name": "feature"}).encode())
    assert response.status == 403
    assert not _snapshot_ref_exists(repo, "feature")


def test_another_boards_cookie_does_not_open_this_one(vwt, board):
    other = start_board(vwt)
    try:
        theirs = {"Cookie": f"vwt_board_{board.port}={other.token}"}
        assert board.request("GET", "/", headers=theirs, cookie=False).status == 403
    finally:
        other.stop()


# -- the Host header (DNS rebinding) ----------------------------------------------------------
@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1:{other}", "127.0.0.1",
                                  "localhost", "0.0.0.0:{port}", "[::1]:{port}",
                                  "127.0.0.1:{port}.evil.example"])
def test_a_foreign_host_header_is_refused_even_with_the_cookie(board, host):
    value = host.format(port=board.port, other=board.port + 1)
    response = board.request("GET", "/api/worktrees", host=value)
    assert response.status == 403
    assert b"answers only to" in response.body


def test_a_request_without_host_header_is_refused(board):
    with socket.create_connection(("127.0.0.1", board.port), timeout=10) as sock:
        sock.sendall(f"GET / HTTP/1.0\r\nCookie: {board.cookie}\r\n\r\n".encode())
        reply = sock.recv(65536)
    assert reply.split(b"\r\n")[0].split()[1] in (b"403", b"400")


def test_localhost_with_the_port_is_accepted(board):
    assert board.request("GET", "/", host=f"localhost:{board.port}").status == 200


# -- state changes: POST, CSRF, origin --------------------------------------------------------
def test_a_post_from_the_page_works(board, worktree, repo):
    response = board.post("snapshot", {"bucket": worktree["bucket"], "name": "feature"})
    assert response.status == 200, response.text
    assert response.json()["kind"] == "done"
    assert _snapshot_ref_exists(repo, "feature")


@pytest.mark.parametrize("csrf", ["", "not-a-page-token"])
def test_a_post_without_a_page_csrf_token_is_refused(board, worktree, repo, csrf):
    response = board.post("snapshot", {"bucket": worktree["bucket"], "name": "feature"},
                          csrf=csrf)
    assert response.status == 403
    assert b"CSRF" in response.body
    assert not _snapshot_ref_exists(repo, "feature")


def test_the_session_token_is_not_a_csrf_token(board, worktree, repo):
    response = board.post("snapshot", {"bucket": worktree["bucket"], "name": "feature"},
                          csrf=board.token)
    assert response.status == 403
    assert not _snapshot_ref_exists(repo, "feature")


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:1",
                                    "https://127.0.0.1:{port}", None])
def test_a_post_from_another_origin_is_refused(board, worktree, repo, origin):
    headers = {"Origin": origin.format(port=board.port)} if origin else {"Origin": ""}
    response = board.post("snapshot", {"bucket": worktree["bucket"], "name": "feature"},
                          headers=headers)
    assert response.status == 403
    assert not _snapshot_ref_exists(repo, "feature")


def test_a_post_the_browser_marks_cross_site_is_refused(board, worktree, repo):
    response = board.post("snapshot", {"bucket": worktree["bucket"], "name": "feature"},
                          headers={"Sec-Fetch-Site": "cross-site"})
    assert response.status == 403
    assert not _snapshot_ref_exists(repo, "feature")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x"])
def test_a_post_a_plain_html_form_could_send_is_refused(board, worktree, repo, content_type):
    response = board.post("snapshot", {"bucket": worktree["bucket"], "name": "feature"},
                          headers={"Content-Type": content_type})
    assert response.status == 415
    assert not _snapshot_ref_exists(repo, "feature")


def test_a_get_never_changes_anything(board, worktree, repo):
    for path in ("/api/snapshot", "/api/remove", "/api/prune"):
        response = board.request("GET", f"{path}?bucket={worktree['bucket']}&name=feature")
        assert response.status == 405, path
    assert not _snapshot_ref_exists(repo, "feature")
    assert Path(worktree["path"]).is_dir()


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS"])
def test_other_methods_are_refused_without_cors_headers(board, method):
    response = board.request(method, "/api/snapshot", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert response.status == 405
    assert not [k for k, _ in response.headers if k.lower().startswith("access-control-")]


def test_no_response_carries_cors_headers(board, worktree):
    responses = [board.request("GET", "/", headers={"Origin": "http://evil.example"}),
                 board.request("GET", "/api/worktrees", headers={"Origin": "http://evil.example"}),
                 board.post("snapshot", {"bucket": worktree["bucket"], "name": "feature"})]
    for response in responses:
        assert not [k for k, _ in response.headers if k.lower().startswith("access-control-")]


# -- bodies -----------------------------------------------------------------------------------
def test_a_body_over_the_limit_is_refused(board, worktree, repo):
    big = json.dumps({"bucket": worktree["bucket"], "name": "feature", "pad": "x" * 70_000})
    response = board.post("snapshot", json.loads(big))
    assert response.status == 413
    assert not _snapshot_ref_exists(repo, "feature")


def test_a_chunked_body_over_the_limit_is_refused(board, worktree, repo):
    csrf = board.page_token()
    connection = http.client.HTTPConnection("127.0.0.1", board.port, timeout=30)
    chunks = (b"x" * 16_384 for _ in range(8))
    connection.request("POST", "/api/snapshot", body=chunks, encode_chunked=True, headers={
        "Host": f"127.0.0.1:{board.port}", "Cookie": board.cookie, "Origin": board.origin,
        "Content-Type": "application/json", "X-Vwt-Csrf": csrf, "Transfer-Encoding": "chunked"})
    assert connection.getresponse().status == 413
    connection.close()
    assert not _snapshot_ref_exists(repo, "feature")


def test_a_body_that_is_not_a_json_object_is_an_error_line(board):
    for body in (b"[1, 2]", b"{not json"):
        response = board.request("POST", "/api/snapshot", body=body, headers={
            "Origin": board.origin, "Content-Type": "application/json",
            "X-Vwt-Csrf": board.page_token()})
        assert response.status == 400
        assert response.json()["kind"] == "error"


# -- what is served ---------------------------------------------------------------------------
@pytest.mark.parametrize("path", [
    "/static/", "/static", "/static/board.html", "/static/../app.py", "/static/%2e%2e/app.py",
    "/static/..%2fapp.py", "/static/%2e%2e%2f%2e%2e%2fapi.py", "/static/__init__.py",
    "/static//etc/passwd", "/static/board.js/", "/etc/passwd", "/src/vibe_worktree/api.py",
    "/board/app.py", "/.git/config",
])
def test_no_directory_listing_and_nothing_outside_the_assets(board, path):
    response = board.request("GET", path)
    assert response.status in (404, 405), (path, response.status)
    assert b"import" not in response.body and b"root:" not in response.body


def test_the_assets_are_served_from_the_package(board):
    script = board.request("GET", "/static/board.js")
    assert script.status == 200
    assert script.header("content-type").startswith("text/javascript")
    assert b"textContent" in script.body
    assert board.request("GET", "/static/board.css").status == 200


def test_pages_forbid_framing_sniffing_and_foreign_sources(board):
    response = board.request("GET", "/")
    policy = response.header("content-security-policy") or ""
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert response.header("x-content-type-options") == "nosniff"
    assert re.search(rb"<script[^>]*src=\"/static/board.js\"", response.body)
    assert not re.search(rb"https?://", response.body.replace(b"http://www.w3.org", b""))


def test_an_unknown_action_is_refused(board):
    response = board.post("format-disk", {})
    assert response.status == 404
    assert response.json()["kind"] == "error"


# -- the process ------------------------------------------------------------------------------
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/net/tcp")
def test_it_listens_on_127_0_0_1_only(board):
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port = local.split(":")
            if state == "0A" and int(port, 16) == board.port:
                listening.append(address)
    assert listening == ["0100007F"]  # 127.0.0.1, and nothing on IPv6


def test_ctrl_c_stops_it_cleanly_even_with_a_live_stream_open(vwt):
    started = start_board(vwt)
    stream = http.client.HTTPConnection("127.0.0.1", started.port, timeout=30)
    stream.request("GET", "/api/events", headers={"Host": f"127.0.0.1:{started.port}",
                                                  "Cookie": started.cookie})
    assert stream.getresponse().status == 200
    began = time.monotonic()
    code, err = started.stop()
    assert code == 0, err
    assert time.monotonic() - began < 5
    assert "board stopped" in err and "Traceback" not in err
    stream.close()


def test_sigterm_stops_it_cleanly(vwt):
    started = start_board(vwt)
    started.proc.send_signal(signal.SIGTERM)
    _out, err = started.proc.communicate(timeout=15)
    assert started.proc.returncode == 0, err
    assert "Traceback" not in err


def test_a_port_in_use_is_one_error_line(vwt, board):
    result = vwt("board", "--no-open", "--port", str(board.port))
    assert result.code == 1
    assert result.err.startswith("vwt: error: cannot listen on 127.0.0.1:")
    assert len(result.err_lines) == 1


def test_an_impossible_port_is_bad_usage(vwt):
    result = vwt("board", "--no-open", "--port", "70000")
    assert result.code == 2
    assert "not a TCP port" in result.err


def test_the_start_up_path_does_not_import_the_web_stack(vwt, repo):
    script = ("import sys; from vibe_worktree import cli; cli.main(['list', '--json']); "
              "cli.main(['--version']); "
              "print(sorted(m for m in sys.modules if m.split('.')[0] in "
              "('starlette', 'uvicorn', 'anyio') or m.startswith('vibe_worktree.board')))")
    out = subprocess.run([sys.executable, "-c", script], cwd=repo.path, env=vwt.env(),
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_board_started_with_an_open_stream_is_not_busy_when_nothing_changes(board, worktree):
    """With a page watching and nothing changing, it sends nothing but a rare keep-alive."""
    stream = http.client.HTTPConnection("127.0.0.1", board.port, timeout=30)
    stream.request("GET", "/api/events", headers={"Host": f"127.0.0.1:{board.port}",
                                                  "Cookie": board.cookie})
    response = stream.getresponse()
    first = response.readline()
    assert first.startswith(b"event: worktrees")
    assert response.readline().startswith(b"data: {")
    assert response.readline() == b"\n"
    stream.sock.settimeout(3)
    with pytest.raises(TimeoutError):
        response.readline()  # nothing changed: nothing is sent
    stream.close()
    ticks = os.sysconf("SC_CLK_TCK")
    fields = Path(f"/proc/{board.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    before = (int(fields[11]) + int(fields[12])) / ticks
    time.sleep(2)
    fields = Path(f"/proc/{board.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    after = (int(fields[11]) + int(fields[12])) / ticks
    assert after - before < 0.5  # no page open: it does nothing at all
