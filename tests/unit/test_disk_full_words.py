"""What counts as a full disk in git's words and in an OSError (SPEC §16: one line saying so)."""

import errno

import pytest

from vibe_worktree.core.errors import DiskFull, disk_is_full, says_disk_full

FULL = [  # as git 2.39 printed them on a full tmpfs
    "fatal: could not write to '.git/worktrees/feat/commondir': No space left on device",
    "error: unable to write file src/app.py",
    "fatal: unable to write loose object file: No space left on device",
    "fatal: cannot update ref 'refs/heads/feat': couldn't write '.git/refs/heads/feat.lock'",
    "fatal: unable to write new index file",
    "fatal: sha1 file '.git/index.lock' write error. Out of diskspace",
    "error: write error: Disk quota exceeded",
]
NOT_FULL = [
    "fatal: could not write to '.git/worktrees/feat/commondir': Permission denied",
    "error: unable to write file src/app.py: Read-only file system",
    "fatal: write error: Broken pipe",
    "error: write error: Input/output error",
    "fatal: 'main' is already checked out at '/repo'",
]


@pytest.mark.parametrize("text", FULL)
def test_git_saying_it_ran_out_of_space_is_a_full_disk(text):
    assert says_disk_full(text)


@pytest.mark.parametrize("text", NOT_FULL)
def test_other_write_failures_are_not_called_a_full_disk(text):
    assert not says_disk_full(text)


def test_enospc_and_edquot_are_a_full_disk_and_the_message_says_what_to_do():
    assert disk_is_full(OSError(errno.ENOSPC, "No space left on device"))
    assert disk_is_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert not disk_is_full(OSError(errno.EROFS, "Read-only file system"))
    message = DiskFull("writing /home/me/.vibe").message
    assert "No space left on device" in message and "vwt prune" in message
    assert "\n" not in message
