"""The process table: who runs inside which folder, who listens on which port, and
stopping a set of processes with real signals."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vibe_worktree.core import proctable
from vibe_worktree.core.proctable import GONE, KILLED, LEFT, TERMINATED, Proc

from .conftest import Procs, alive, free_port

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")


def seen(folder: Path) -> list[int]:
    return proctable.scan().inside([str(folder)])[str(folder)]


def proc_of(pid: int) -> Proc:
    [found] = proctable.scan().procs([pid])
    return found


def test_a_process_is_inside_its_folder_and_every_folder_above(procs: Procs,
                                                               folder: Path) -> None:
    (folder / "sub" / "deeper").mkdir(parents=True)
    pid = procs.sleeper(folder / "sub" / "deeper")
    table = proctable.scan()
    inside = table.inside([str(folder), str(folder / "sub"), str(folder / "sub" / "deeper")])
    assert pid in inside[str(folder / "sub" / "deeper")]
    # the nearest folder asked about has it; a folder above it does too when asked alone
    assert pid in table.inside([str(folder)])[str(folder)]
    assert table.command(pid) == "sleep 120"


def test_a_sibling_folder_sharing_the_name_as_a_prefix_is_not_inside(procs: Procs,
                                                                      folder: Path) -> None:
    sibling = folder.with_name(folder.name + "-2")
    sibling.mkdir()
    pid = procs.sleeper(sibling)
    assert pid not in seen(folder)
    assert pid in seen(sibling)


def test_folders_are_compared_on_their_real_paths(procs: Procs, folder: Path) -> None:
    link = folder.with_name("link")
    link.symlink_to(folder)
    pid = procs.sleeper(link)  # the kernel resolves it: its cwd is the real folder
    assert pid in seen(folder)
    assert pid in seen(link)


def test_a_process_whose_folder_was_deleted_is_inside_nothing(procs: Procs,
                                                              folder: Path) -> None:
    (folder / "gone").mkdir()
    pid = procs.sleeper(folder / "gone")
    assert pid in seen(folder)
    (folder / "gone").rmdir()
    assert pid not in seen(folder)
    # a new folder of that name is not where it runs either
    (folder / "gone").mkdir()
    assert pid not in seen(folder / "gone")


def test_a_real_server_listens_on_its_port(procs: Procs, folder: Path) -> None:
    port = free_port()
    pid = procs.server(folder, port)
    table = proctable.scan()
    assert port in table.listening()[pid]
    [listener] = [x for x in table.listeners() if x.port == port]
    assert listener.pids == (pid,) and listener.uid == os.getuid()
    assert pid in table.inside([str(folder)])[str(folder)]
    assert "http.server" in table.command(pid)


def test_processes_that_come_and_go_during_a_scan_are_no_error(folder: Path) -> None:
    churn = subprocess.Popen(["sh", "-c", "while :; do /bin/true & /bin/true; done"],
                             cwd=folder, start_new_session=True)
    try:
        for _ in range(30):
            table = proctable.scan()
            table.listeners()
            for pid in table.inside([str(folder)])[str(folder)]:
                table.command(pid)
                table.started(pid)
    finally:
        os.killpg(churn.pid, 9)
        churn.wait()


CALLER = """
import json, sys
from vibe_worktree.core import proctable
print(json.dumps({"me": __import__("os").getpid(),
                  "users": [p.pid for p in proctable.users([sys.argv[1]])[sys.argv[1]]]}))
"""


@pytest.mark.slow
def test_the_caller_and_its_ancestors_never_count_as_users(procs: Procs,
                                                           folder: Path) -> None:
    # a shell inside the folder (an ancestor) starts a sibling sleep, then asks
    script = f'sleep 120 >/dev/null 2>&1 & echo "$!"; "{sys.executable}" -c \'{CALLER}\' "{folder}"'
    out = subprocess.run(["sh", "-c", script], cwd=folder, capture_output=True, text=True,
                         check=True, start_new_session=True).stdout.splitlines()
    sibling = int(out[0])
    procs.pids.append(sibling)
    found = json.loads(out[1])
    assert found["users"] == [sibling]


def test_stop_terminates_and_kills_what_ignores_sigterm(procs: Procs, folder: Path) -> None:
    polite = procs.sleeper(folder)
    stubborn = procs.ignoring_term(folder)
    users = proctable.users([str(folder)])[str(folder)]
    assert {p.pid for p in users} == {polite, stubborn}
    started = time.monotonic()
    stopped = proctable.stop(users, str(folder), grace=0.5)
    waited = time.monotonic() - started
    assert {s.pid: s.how for s in stopped} == {polite: TERMINATED, stubborn: KILLED}
    procs.reap()
    assert not alive(polite) and not alive(stubborn)
    assert waited >= 0.5, "SIGKILL came before the grace period was over"


def test_stop_never_signals_a_pid_that_is_now_another_process(procs: Procs,
                                                              folder: Path) -> None:
    pid = procs.sleeper(folder)
    reused = proc_of(pid)._replace(started="1")  # as if the pid had been handed on
    [stopped] = proctable.stop([reused], str(folder), grace=0.2)
    assert stopped.how == LEFT
    assert alive(pid)


def test_stop_never_signals_a_process_that_left_the_folder(procs: Procs,
                                                           folder: Path) -> None:
    elsewhere = folder.with_name("elsewhere")
    elsewhere.mkdir()
    pid = procs.sleeper(elsewhere)
    [stopped] = proctable.stop([proc_of(pid)], str(folder), grace=0.2)
    assert stopped.how == LEFT
    assert alive(pid)


def test_stop_never_signals_the_caller_or_its_ancestors(folder: Path) -> None:
    me = Proc(os.getpid(), proctable.scan().started(os.getpid()), "pytest", str(folder))
    parent = Proc(os.getppid(), proctable.scan().started(os.getppid()), "parent", str(folder))
    assert [s.how for s in proctable.stop([me, parent], str(folder), grace=0.1)] == [LEFT,
                                                                                     LEFT]


def test_stop_reports_a_process_that_exited_by_itself(procs: Procs, folder: Path) -> None:
    pid = procs.start(["sh", "-c", "exit 0"], folder)
    found = Proc(pid, "", "sh", str(folder))
    procs.children[-1].wait()
    [stopped] = proctable.stop([found], str(folder), grace=0.1)
    assert stopped.how == GONE


@pytest.mark.slow
def test_a_nested_agent_whose_parent_exited_is_still_a_user(procs: Procs,
                                                            folder: Path) -> None:
    pid = procs.orphan(folder)
    assert pid in [p.pid for p in proctable.users([str(folder)])[str(folder)]]


# -- another user's processes (the tests run as root: they switch users) --------------------
@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder other users may enter (the test's own tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="vwt-proctable-")).resolve()
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def as_user(uid: int, argv: list[str], **kw: object) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]


LOOK = """
import json, sys
from vibe_worktree.core import proctable
table = proctable.scan()
print(json.dumps({"unreadable": list(table.unreadable),
                  "inside": table.inside([sys.argv[1]])[sys.argv[1]],
                  "may_be_inside": table.may_be_inside(sys.argv[1])}))
"""


def look_as(uid: int, folder: Path) -> dict[str, list[int]]:
    out = subprocess.run(as_user(uid, [sys.executable, "-c", LOOK, str(folder)]),
                         capture_output=True, text=True, check=True, cwd="/")
    result: dict[str, list[int]] = json.loads(out.stdout)
    return result


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="switching users needs root and setpriv")
def test_another_users_process_is_unreadable_and_named_when_it_may_be_inside(
        procs: Procs, shared_folder: Path) -> None:
    pid = procs.start(as_user(12345, ["sleep", "120"]), shared_folder)
    time.sleep(0.2)  # setpriv has exec-ed sleep
    found = look_as(12346, shared_folder)
    assert pid in found["unreadable"]
    assert pid not in found["inside"]  # never guessed inside
    assert pid in found["may_be_inside"]  # but named: others may enter the folder
    shared_folder.chmod(0o750)  # now no other user could have gone in
    assert pid not in look_as(12346, shared_folder)["may_be_inside"]


@pytest.mark.slow
def test_a_process_that_started_a_moment_ago_and_ends_at_once_is_no_user(
        procs: Procs, folder: Path) -> None:
    """The `git status` a board or a status line runs in a worktree for a few milliseconds
    must not refuse a removal; a process that stays does."""
    passing = procs.start(["sleep", "0.3"], folder)
    staying = procs.sleeper(folder)
    found = [p.pid for p in proctable.users([str(folder)])[str(folder)]]
    assert found == [staying]
    assert passing not in found
