"""The one error type a user can act on, and the exit codes of the spec."""

from __future__ import annotations

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
