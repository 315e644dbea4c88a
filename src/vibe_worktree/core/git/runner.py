"""The one place git runs: the process runner and its hardening.

Housekeeping calls (everything but creating a checkout for the user) run with
fsmonitor and hooks off, no credential prompts, and every filter driver the
repository's own config defines neutralised: the repository belongs to someone
else and its config may name any command. The rest of `core.git` asks its
questions through `Git` here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import cache

from ..errors import DiskFull, GitFailed, VwtError, says_disk_full
from ..light import NamedTuple
from ..processes import Finished, Process, find_program

TYPE_CHECKING = False


if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")
    R = TypeVar("R")


# Passed through GIT_CONFIG_COUNT/KEY_n/VALUE_n, not `-c`: a key such as the one of a
# filter driver named `a=b` cannot be written as `-c key=value` unambiguously.
_HARDENING = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.untrackedCache", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("commit.gpgSign", "false"),
    ("diff.external", ""),
    ("protocol.ext.allow", "never"),
)


SNAPSHOT_IDENTITY = {
    "GIT_AUTHOR_NAME": "vibe-worktree",
    "GIT_AUTHOR_EMAIL": "vwt@localhost",
    "GIT_COMMITTER_NAME": "vibe-worktree",
    "GIT_COMMITTER_EMAIL": "vwt@localhost",
}


FETCH_TIMEOUT = 10.0


def _base_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(GIT_TERMINAL_PROMPT="0", GCM_INTERACTIVE="never", GIT_ASKPASS="")
    env.pop("SSH_ASKPASS", None)
    for leaked in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        env.pop(leaked, None)
    return env


class Git(NamedTuple):
    """Runs git in `cwd`; `housekeeping` adds the hardening of the spec."""

    cwd: str
    housekeeping: bool = True
    neutralised_filters: tuple[str, ...] = ()
    # merge drivers the repository's own config defines: set to `false`, so a merge that
    # would run one reports a conflict instead of running the repository's command
    neutralised_merge_drivers: tuple[str, ...] = ()
    extra_config: tuple[tuple[str, str], ...] = ()  # more housekeeping overrides

    def command(self, args: Sequence[str]) -> list[str]:
        # `-C` rather than a working directory for the child: posix_spawn has none.
        return ["git", "-C", self.cwd, *args]

    def config_env(self) -> dict[str, str]:
        """The housekeeping overrides as GIT_CONFIG_* variables (children inherit them)."""
        if not self.housekeeping:
            return {}
        pairs = list(_HARDENING)
        for driver in self.neutralised_filters:
            pairs += [(f"filter.{driver}.clean", ""), (f"filter.{driver}.smudge", ""),
                      (f"filter.{driver}.process", ""), (f"filter.{driver}.required", "false")]
        pairs += [(f"merge.{driver}.driver", "false") for driver in self.neutralised_merge_drivers]
        pairs += self.extra_config
        try:
            first = int(os.environ.get("GIT_CONFIG_COUNT", "0"))
        except ValueError:
            first = 0
        env = {"GIT_CONFIG_COUNT": str(first + len(pairs))}
        for i, (key, value) in enumerate(pairs, start=first):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
        return env

    def run(
        self,
        *args: str,
        input: str | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
        timeout: float | None = None,
        new_session: bool = False,
        show_progress: bool = False,
    ) -> Finished:
        """Run git and wait. `new_session` detaches it from the terminal (nothing can
        prompt there) and lets a timeout kill its whole process group, helpers included
        (TimedOut). `show_progress` leaves git's stderr on ours so a person sees it."""
        process = self.start(*args, env=env, input=input,
                             new_session=new_session or timeout is not None,
                             capture_stderr=not show_progress)
        result = finish(process, timeout)
        if check and result.returncode != 0:
            raise self.failure(args, result.stderr if not show_progress else None)
        return result

    def failure(self, args: Sequence[str], stderr: str | None) -> VwtError:
        """The error to raise for a git command that failed: DiskFull when git ran out of
        space, else GitFailed with its first error line (`stderr` None: git printed it)."""
        if stderr is not None and says_disk_full(stderr):
            return DiskFull(f"writing in {self.cwd}")
        why = first_line(stderr) if stderr is not None else "see git's message above"
        return GitFailed(f"git {_subcommand(args)} failed: {why}")

    def start(self, *args: str, env: dict[str, str] | None = None, input: str | None = None,
              new_session: bool = False, capture_stderr: bool = True) -> Process:
        """Start git without waiting; `finish` collects it. For independent questions."""
        full_env = _base_env()
        full_env.update(self.config_env())
        if env:
            full_env.update(env)
        if not os.path.isdir(self.cwd):
            raise VwtError(f"directory {self.cwd} does not exist")
        return Process(
            _git_program(full_env.get("PATH")), self.command(args), full_env,
            input=None if input is None else input.encode("utf-8", "surrogateescape"),
            capture_stderr=capture_stderr, new_session=new_session,
        )

    def out(self, *args: str, **kwargs: object) -> str:
        return self.run(*args, **kwargs).stdout  # type: ignore[arg-type]

    def ok(self, *args: str) -> bool:
        return self.run(*args, check=False).returncode == 0


def _subcommand(args: Sequence[str]) -> str:
    """`worktree` of `-c key=value ... worktree add ...`: what a person calls the command."""
    words = iter(args)
    for word in words:
        if word == "-c":
            next(words, None)
        else:
            return word
    return "(no command)"


def first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (errors or lines or ["(no message)"])[0]


def finish(process: Process, timeout: float | None = None) -> Finished:
    """Wait for a started git; TimedOut after `timeout` seconds."""
    out, err = process.communicate(timeout)
    return Finished(process.args, process.wait(), out, err)


@cache
def _git_program(path: str | None) -> str:
    found = find_program("git", path)
    if found is None:
        raise VwtError("git is not installed or not on PATH; install git")
    return found


def repo_filter_drivers(git: Git) -> tuple[tuple[str, ...], bool]:
    """Filter drivers the repository's own config defines (local, worktree, includes), and
    whether worktrees may have config of their own (extensions.worktreeConfig)."""
    out = git.out(
        "config", "-z", "--show-scope", "--get-regexp", r"^(filter\.|extensions\.worktreeconfig$)",
        check=False,
    )
    drivers: set[str] = set()
    per_worktree = False
    fields = out.split("\0")
    for scope, entry in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = entry.partition("\n")
        if key == "extensions.worktreeconfig":
            per_worktree = value.strip().lower() in ("true", "yes", "on", "1")
            continue
        driver = _filter_driver(key)
        if driver and scope in ("local", "worktree"):
            drivers.add(driver)
    return tuple(sorted(drivers)), per_worktree


def _filter_driver(key: str) -> str | None:
    """`filter.<driver>.<setting>` -> driver, for the settings that name a command."""
    driver, _, setting = key[len("filter."):].rpartition(".")
    return driver if driver and setting in ("clean", "smudge", "process", "required") else None


def config_file_filter_drivers(git: Git, path: str) -> set[str]:
    """Filter driver names one config file defines (with the files it includes)."""
    out = git.out("config", "-z", "--includes", "--file", path, "--get-regexp", r"^filter\.",
                  check=False)
    drivers = {_filter_driver(entry.split("\n", 1)[0]) for entry in out.split("\0")}
    return {d for d in drivers if d}


def repo_merge_drivers(git: Git) -> tuple[str, ...]:
    """Merge drivers (`merge.<driver>.driver`) defined in the repository's own config."""
    out = git.out("config", "-z", "--show-scope", "--get-regexp", r"^merge\..+\.driver$",
                  check=False)
    fields = out.split("\0")
    found = {entry.split("\n", 1)[0][len("merge."):-len(".driver")]
             for scope, entry in zip(fields[0::2], fields[1::2], strict=False)
             if scope in ("local", "worktree")}
    return tuple(sorted(d for d in found if d))


def map_parallel(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """`fn` over `items` on a small thread pool: git processes run side by side."""
    if len(items) <= 1:
        return [fn(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor  # imports logging: only when needed

    with ThreadPoolExecutor(pool_size()) as pool:
        return list(pool.map(fn, items))


def pool_size() -> int:
    return max(2, min(8, 2 * (os.cpu_count() or 1)))
