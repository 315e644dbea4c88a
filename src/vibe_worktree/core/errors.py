"""The one error type a user can act on, and the exit codes of the spec."""

from __future__ import annotations

import errno

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NEEDS_CONFIRMATION = 3
EXIT_HELD = 4


class VwtError(Exception):
    """A failure with a sentence that says what went wrong and what to do.

    The CLI prints the message on one line and exits with `exit_code`; nothing
    that raises it expects a traceback to be shown.
    """

    exit_code = EXIT_ERROR

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def message(self) -> str:
        return str(self.args[0])


SIGINT, SIGTERM = 2, 15  # POSIX numbers; `signal` is not imported for two constants


class Interrupted(KeyboardInterrupt):
    """A person (Ctrl-C: SIGINT) or a process manager (SIGTERM) stopped the command.

    A KeyboardInterrupt, so code that tidies up on one tidies up on both. `left` says in
    words what the command leaves behind and how to finish it; the CLI prints it and exits
    with 128 + the signal's number, as a shell reports a command a signal ended."""

    def __init__(self, signum: int = SIGINT, left: str | None = None) -> None:
        super().__init__(signum, left)
        self.signum = signum
        self.left = left

    @classmethod
    def of(cls, exc: KeyboardInterrupt, left: str | None = None) -> Interrupted:
        """The same interruption (Ctrl-C for a plain KeyboardInterrupt), with `left`."""
        return cls(exc.signum if isinstance(exc, Interrupted) else SIGINT, left)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def message(self) -> str:
        how = "interrupted" if self.signum == SIGINT else "stopped by SIGTERM"
        return how if self.left is None else f"{how}; {self.left}"


class InvalidName(VwtError):
    exit_code = EXIT_USAGE


class NotFound(VwtError):
    pass


class NotARepository(VwtError):
    pass


class GitFailed(VwtError):
    pass


class ValidationFailed(VwtError):
    """A checkout or record does not look like what we manage: refuse, change nothing."""


class HeldError(VwtError):
    exit_code = EXIT_HELD


class DiskFull(VwtError):
    """The disk (or the user's quota) has no room left for what we or git had to write."""

    def __init__(self, detail: str | None = None) -> None:
        where = f" ({detail})" if detail else ""
        super().__init__(f"the disk is full: No space left on device{where}; free some space, "
                         "then run `vwt prune` and try again")


# What git says when a write failed for want of space. git's own words are not all tied to
# ENOSPC ("unable to write file", "write error" are what it prints when a write came up
# short), so they count only together with no sign of another cause.
_DISK_FULL_WORDS = ("no space left on device", "disk quota exceeded", "out of diskspace",
                    "unable to write file", "write error", "short write", "couldn't write",
                    "unable to write new index file", "unable to write loose object")
_OTHER_CAUSES = ("permission denied", "read-only file system", "broken pipe",
                 "input/output error", "operation not permitted")


def says_disk_full(text: str) -> bool:
    """git's (or another program's) error text says a write failed for want of space."""
    lowered = text.lower()
    if "no space left on device" in lowered or "disk quota exceeded" in lowered:
        return True
    return any(w in lowered for w in _DISK_FULL_WORDS) and not any(
        c in lowered for c in _OTHER_CAUSES)


def disk_is_full(exc: BaseException) -> bool:
    """An OSError of a write that found no space (ENOSPC, or EDQUOT: the quota is full)."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)
