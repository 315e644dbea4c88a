"""A waiter announces itself, so a holder that lets go between passes pauses only for it."""

import subprocess
import sys
import textwrap
import time

from vibe_worktree.core.locks import locked, someone_waiting

WAITER = textwrap.dedent("""\
    import sys
    from vibe_worktree.core.locks import locked
    with locked(sys.argv[1], sys.argv[2]):
        print("got it", flush=True)
""")


def _wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_a_process_waiting_for_a_lock_is_seen_and_gone_once_it_has_it(tmp_path):
    lock = str(tmp_path / ".prune")
    assert not someone_waiting(lock)
    with locked(lock, str(tmp_path)):
        waiter = subprocess.Popen([sys.executable, "-c", WAITER, lock, str(tmp_path)],
                                  stdout=subprocess.PIPE, text=True)
        assert _wait_until(lambda: someone_waiting(lock)), "the waiter never showed"
    out, _ = waiter.communicate(timeout=30)
    assert out == "got it\n" and waiter.returncode == 0
    assert not someone_waiting(lock)


def test_an_uncontended_lock_announces_nothing(tmp_path):
    lock = str(tmp_path / ".prune")
    with locked(lock, str(tmp_path)):
        pass
    assert not (tmp_path / ".prune.waiting").exists()
    assert not someone_waiting(lock)
