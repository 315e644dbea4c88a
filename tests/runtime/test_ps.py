"""The processes/ports report of `vwt ps`: real servers in real worktrees, and the
mismatch of a leased port served from another folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from conftest import Repo, Sandbox, Vwt
from vibe_worktree.core.layout import Root
from vibe_worktree.runtime.ps import PsReport, report

from .conftest import Procs, free_port, leased_port

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")


def ps(sandbox: Sandbox, repo: Repo, name: str | None = None) -> PsReport:
    return report(Root.at(str(sandbox.vibe_home)), [repo.bucket], name)


def worktree(found: PsReport, name: str) -> dict[str, Any]:
    [item] = [w.to_json() for w in found.worktrees if w.name == name]
    return item


def test_a_server_inside_its_worktree_on_its_lease_is_no_mismatch(
        sandbox: Sandbox, repo: Repo, vwt: Vwt, procs: Procs) -> None:
    path = Path(vwt.new("web")["path"])
    port = leased_port(vwt, "web")
    (path / "static").mkdir()
    pid = procs.server(path / "static", port)
    found = ps(sandbox, repo)
    item = worktree(found, "web")
    assert item["ports"] == [port]
    assert item["processes"] == [{"pid": pid, "command": item["processes"][0]["command"],
                                  "listening": [port]}]
    assert "http.server" in item["processes"][0]["command"]
    assert item["port_owners"] == [{"port": port, "pid": pid,
                                    "command": item["processes"][0]["command"],
                                    "cwd": str(path / "static"), "inside": True, "uid": None}]
    assert found.mismatches == []
    assert found.worktrees[0].links == [f"http://127.0.0.1:{port}/"]


def test_a_lease_port_served_from_the_main_checkout_is_a_mismatch(
        sandbox: Sandbox, repo: Repo, vwt: Vwt, procs: Procs) -> None:
    vwt.new("web")
    port = leased_port(vwt, "web")
    pid = procs.server(repo.path, port)
    found = ps(sandbox, repo)
    item = worktree(found, "web")
    assert item["processes"] == []
    assert [(o["port"], o["pid"], o["inside"]) for o in item["port_owners"]] == [
        (port, pid, False)]
    [mismatch] = found.mismatches
    assert mismatch.message == f"port {port} of web is served by pid {pid} in {repo.path}"
    assert found.to_json()["mismatches"] == [{
        "name": "web", "bucket": repo.bucket, "port": port, "pid": pid, "cwd": str(repo.path),
        "message": mismatch.message}]


def test_a_lease_port_served_from_another_worktree_is_a_mismatch_of_the_lease_holder(
        sandbox: Sandbox, repo: Repo, vwt: Vwt, procs: Procs) -> None:
    vwt.new("web")
    other = Path(vwt.new("api")["path"])
    web_port = leased_port(vwt, "web")
    pid = procs.server(other, web_port)  # api's session started its server on web's port
    found = ps(sandbox, repo)
    api = worktree(found, "api")
    assert [(p["pid"], p["listening"]) for p in api["processes"]] == [(pid, [web_port])]
    assert api["port_owners"] == []  # nothing listens on api's own port
    assert [m.message for m in found.mismatches] == [
        f"port {web_port} of web is served by pid {pid} in {other}"]


def test_every_process_inside_is_listed_with_what_it_listens_on(
        sandbox: Sandbox, repo: Repo, vwt: Vwt, procs: Procs) -> None:
    path = Path(vwt.new("web")["path"])
    sleeper = procs.sleeper(path)
    nested = procs.orphan(path)
    port = free_port()  # not leased: still shown, and linked
    server = procs.server(path, port)
    found = ps(sandbox, repo, "web")
    item = worktree(found, "web")
    assert {p["pid"]: p["listening"] for p in item["processes"]} == {
        sleeper: [], nested: [], server: [port]}
    assert item["ports"] == [leased_port(vwt, "web")] and item["port_owners"] == []
    assert found.worktrees[0].links == [f"http://127.0.0.1:{port}/"]


def test_name_picks_one_worktree_and_snapshots_are_left_out(
        sandbox: Sandbox, repo: Repo, vwt: Vwt) -> None:
    vwt.new("web")
    vwt.new("gone")
    (Path(repo.checkout("gone")) / "work.txt").write_text("work\n")
    vwt.ok("rm", "gone", "-y")  # dirty: snapshotted, listed as a snapshot
    assert [w.name for w in ps(sandbox, repo).worktrees] == ["web"]
    assert [w.name for w in ps(sandbox, repo, "web").worktrees] == ["web"]
    assert ps(sandbox, repo, "nope").worktrees == ()


def test_the_report_itself_is_not_a_process_inside(
        sandbox: Sandbox, repo: Repo, vwt: Vwt, monkeypatch: pytest.MonkeyPatch) -> None:
    path = Path(vwt.new("web")["path"])
    monkeypatch.chdir(path)
    assert worktree(ps(sandbox, repo), "web")["processes"] == []


# -- the command ----------------------------------------------------------------------------
def test_vwt_ps_prints_each_worktree_its_processes_and_the_mismatches(
        repo: Repo, vwt: Vwt, procs: Procs) -> None:
    path = Path(vwt.new("web")["path"])
    vwt.new("api")
    web_port, api_port = leased_port(vwt, "web"), leased_port(vwt, "api")
    inside = procs.server(path, web_port)
    outside = procs.server(repo.path, api_port)
    result = vwt.ok("ps")
    lines = result.out.splitlines()
    assert lines[0] == f"api (ports {api_port}): nothing runs inside"
    assert lines[1] == f"web (ports {web_port}): 1 process"
    assert lines[2].split()[:2] == [str(inside), str(web_port)]
    assert lines[-1] == f"port {api_port} of api is served by pid {outside} in {repo.path}"
    document = vwt.ok("ps", "--json").json()  # checked against schemas/ps.json as well
    assert [m["port"] for m in document["mismatches"]] == [api_port]


def test_check_exits_1_on_a_mismatch_and_0_without(repo: Repo, vwt: Vwt, procs: Procs) -> None:
    path = Path(vwt.new("web")["path"])
    vwt.new("api")
    port = leased_port(vwt, "web")
    assert vwt("ps", "web", "--check").code == 0  # nothing listens: nothing to mistake
    server = procs.server(repo.path, port)
    refused = vwt("ps", "web", "--check", "--json")
    assert refused.code == 1 and refused.json()["mismatches"][0]["pid"] == server
    assert refused.err_lines == [
        f"vwt: error: port {port} of web is served by pid {server} in {repo.path}"]
    assert vwt("ps", "api", "--check").code == 0  # another worktree's mismatch is not api's
    procs.cleanup()
    procs.server(path, port)
    assert vwt("ps", "--check").code == 0


def test_ps_outside_a_repository_shows_every_repository(
        repo: Repo, make_repo, vwt: Vwt, sandbox: Sandbox) -> None:  # type: ignore[no-untyped-def]
    vwt.new("web")
    other = make_repo("other")
    vwt.new("api", cwd=other.path)
    found = vwt.ok("ps", "--json", cwd=sandbox.tmp / "outside").json()
    assert sorted(w["name"] for w in found["worktrees"]) == ["api", "web"]
    assert [w["name"] for w in vwt.ok("ps", "--json").json()["worktrees"]] == ["web"]
    assert sorted(w["name"] for w in vwt.ok("ps", "--all", "--json").json()["worktrees"]) == [
        "api", "web"]


def test_ps_of_an_unknown_name_or_with_all_is_refused(repo: Repo, vwt: Vwt) -> None:
    assert vwt("ps", "nope").code == 1
    assert vwt("ps", "web", "--all").code == 2
