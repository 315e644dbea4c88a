"""The posix_spawn runner: pipes that never deadlock, timeouts that kill the whole group."""

from __future__ import annotations

import os
import time

import pytest

from vibe_worktree.core.processes import Process, TimedOut, find_program
from vibe_worktree.core.proctable import processes_inside

SH = find_program("sh", os.environ.get("PATH"))
assert SH is not None


def sh(script: str, **options: object) -> Process:
    return Process(SH, ["sh", "-c", script], dict(os.environ), **options)  # type: ignore[arg-type]


def test_output_and_status_and_stderr_are_captured() -> None:
    process = sh("echo out; echo err >&2; exit 3")
    assert process.communicate() == ("out\n", "err\n")
    assert process.wait() == 3


def test_big_input_and_big_outputs_on_both_pipes_do_not_deadlock() -> None:
    data = ("x" * 1023 + "\n") * 2048  # 2 MiB, far more than a pipe holds
    process = sh("tee /dev/stderr", input=data.encode())
    out, err = process.communicate(timeout=30)
    assert out == data and err == data and process.wait() == 0


def test_stdin_is_empty_without_input() -> None:
    process = sh("cat")
    assert process.communicate(timeout=10) == ("", "")


def test_a_child_that_stops_reading_its_input_is_not_an_error() -> None:
    process = sh("head -c 1 >/dev/null; echo done", input=b"y" * (1 << 22))
    assert process.communicate(timeout=30)[0] == "done\n"


def test_timeout_kills_the_whole_new_session() -> None:
    started = time.monotonic()
    process = sh("sleep 30 & echo $!; wait", new_session=True)
    with pytest.raises(TimedOut):
        process.communicate(timeout=0.5)
    assert time.monotonic() - started < 10
    assert process.returncode is not None and process.returncode < 0
    assert not _live_members(process.pid), "the background sleep survived"


def _live_members(session: int) -> list[str]:
    """Processes of the session that are not zombies, after giving SIGKILL a moment."""
    for _ in range(30):
        states = os.popen(f"ps -o stat= -s {session}").read().split()
        live = [s for s in states if not s.startswith("Z")]
        if not live:
            return []
        time.sleep(0.1)
    return live


def test_children_get_the_default_sigpipe() -> None:
    # Python ignores SIGPIPE; a child writing into a closed pipe must die of it quietly.
    process = sh("yes | head -n 1")
    out, err = process.communicate(timeout=10)
    assert out.startswith("y\n") and "Broken pipe" not in err


def test_undecodable_output_survives_as_surrogates() -> None:
    process = sh("printf '\\377\\n'")
    out, _ = process.communicate()
    assert out.encode("utf-8", "surrogateescape") == b"\xff\n"


def test_no_stray_descriptors_reach_the_child() -> None:
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc here")
    keep = os.open(os.devnull, os.O_RDONLY)  # non-inheritable, as Python opens everything
    try:
        process = sh(f"[ -e /proc/self/fd/{keep} ] && echo leaked || echo clean")
        assert process.communicate()[0] == "clean\n"
    finally:
        os.close(keep)


def test_find_program_searches_the_given_path(tmp_path) -> None:
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    (tmp_path / "dir").mkdir()
    assert find_program("tool", f"/nonexistent{os.pathsep}{tmp_path}") == str(tool)
    assert find_program("dir", str(tmp_path)) is None
    assert find_program("missing-program", str(tmp_path)) is None


def test_a_missing_program_raises_file_not_found_and_leaks_no_pipe() -> None:
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc here")
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(FileNotFoundError):
        Process("/nonexistent/prog", ["prog"], dict(os.environ))
    assert set(os.listdir("/proc/self/fd")) <= before


def test_processes_inside_finds_a_process_by_its_current_directory(tmp_path) -> None:
    import subprocess

    inside, neighbour = tmp_path / "wt" / "deep", tmp_path / "wt-2"
    inside.mkdir(parents=True)
    neighbour.mkdir()
    child = subprocess.Popen(["sleep", "30"], cwd=inside)
    try:
        found = processes_inside([str(tmp_path / "wt"), str(neighbour)])
        assert found == {str(tmp_path / "wt"): [child.pid], str(neighbour): []}, \
            "a folder whose name starts the same is not inside"
    finally:
        child.kill()
        child.wait()
    assert processes_inside([str(tmp_path / "wt")]) == {str(tmp_path / "wt"): []}


def test_processes_inside_leaves_out_the_calling_process(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert processes_inside([str(tmp_path)]) == {str(tmp_path): []}
