"""The one place git runs. Every git question is a small function here.

Housekeeping calls (everything but creating a checkout for the user) run with
fsmonitor and hooks off, no credential prompts, and every filter driver the
repository's own config defines neutralised: the repository belongs to someone
else and its config may name any command.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import cache
from typing import NamedTuple

from .errors import DiskFull, GitFailed, NotARepository, VwtError, says_disk_full
from .processes import Finished, Process, TimedOut, find_program

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
PARALLEL_CHECKOUT_THRESHOLD = 2000


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


class RepoInfo(NamedTuple):
    """A repository as the layout sees it."""

    repo_root: str  # resolved top level of the main working tree
    common_dir: str  # resolved absolute common git dir
    toplevel: str  # top level of the working tree we were called from


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


class Probe(NamedTuple):
    """What `new` needs to know before it reserves a name, asked in parallel."""

    info: RepoInfo
    head: str | None  # None when the repository has no commit yet
    refs: dict[str, str]  # refname -> commit: the branch patterns asked about, HEAD's branch
    remote_heads: dict[str, tuple[str, str]]  # remote -> (default branch, its commit)
    remotes: list[str]
    from_commit: str | None


def probe(cwd: str, branch_patterns: Sequence[str], from_ref: str | None) -> Probe:
    """Discovery, HEAD, wanted branches, remotes and `--from` in one round of processes.

    In the plain layouts, discovery and HEAD come from the files (two processes fewer
    to start: a small `vwt new` is a few git processes in all).
    """
    git = Git(cwd)
    info = discover_without_git(cwd)
    head_file = _head_without_git(info) if info else None
    refs_wanted = [*branch_patterns, "refs/remotes/*/HEAD"]
    if head_file and head_file.startswith("refs/"):
        refs_wanted.append(head_file)
    started = [
        git.start("for-each-ref", "--format=%(refname)%00%(objectname)%00%(symref)",
                  *refs_wanted),
        git.start("remote"),
    ]
    if head_file is None:
        # HEAD last: in a repository without commits only that line is missing
        started.append(git.start("rev-parse", "--path-format=absolute", "--git-common-dir",
                                 "--show-toplevel", "HEAD"))
    if from_ref:
        started.append(git.start("rev-parse", "--verify", "--quiet", "--end-of-options",
                                 f"{from_ref}^{{commit}}"))
    refs, remote, *rest = [finish(p) for p in started]
    if head_file is None:
        info, head = _info_and_head(git, rest.pop(0))  # NotARepository first
    if refs.returncode != 0:  # such as a repository git refuses (safe.directory)
        raise git.failure(["for-each-ref"], refs.stderr)
    branches, remote_heads = parse_refs(refs.stdout)
    if head_file is not None:
        head = branches.get(head_file) if head_file.startswith("refs/") else head_file
    assert info is not None
    from_commit = None
    if from_ref:
        from_commit = rest[0].stdout.strip() if rest[0].returncode == 0 else None
        if not from_commit:
            raise GitFailed(f"--from {from_ref!r} does not name a commit")
    return Probe(
        info, head, branches,
        remote_heads, [r for r in remote.stdout.splitlines() if r], from_commit,
    )


def parse_refs(text: str) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """for-each-ref lines: refname -> commit, and remote -> (default branch, its commit)."""
    branches: dict[str, str] = {}
    remote_heads: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        name, oid, symref = [*line.split("\0"), "", ""][:3]
        if name.startswith("refs/remotes/") and name.endswith("/HEAD"):
            remote_name = name[len("refs/remotes/"):-len("/HEAD")]
            prefix = f"refs/remotes/{remote_name}/"
            if symref.startswith(prefix):
                remote_heads[remote_name] = (symref[len(prefix):], oid)
        elif name:
            branches[name] = oid
    return branches, remote_heads


def _info_and_head(git: Git, where: Finished) -> tuple[RepoInfo, str | None]:
    lines = where.stdout.splitlines()
    head = lines[2] if where.returncode == 0 and len(lines) > 2 else None
    if where.returncode != 0 and len(lines) >= 2 and all(map(os.path.isabs, lines[:2])):
        where = Finished(where.args, 0, "\n".join(lines[:2]), where.stderr)
    return _repo_info(git, where), head


def discover(cwd: str) -> RepoInfo:
    """The repository containing `cwd`, or NotARepository."""
    found = discover_without_git(cwd)
    if found is not None:
        return found
    git = Git(cwd)
    result = git.run(
        "rev-parse", "--path-format=absolute", "--git-common-dir", "--show-toplevel", check=False
    )
    return _repo_info(git, result)


_DISCOVERY_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
                  "GIT_DISCOVERY_ACROSS_FILESYSTEM")


def discover_without_git(cwd: str) -> RepoInfo | None:
    """The plain layouts (a main checkout, or a linked worktree of one) found by reading
    `.git` on the way up, as git would; None for anything else, and git is asked instead.

    A listing then costs no process at all.
    """
    start = os.path.realpath(cwd)
    if any(k in os.environ for k in _DISCOVERY_ENV) or "/.git/" in f"{start}/":
        return None
    path = start
    while True:
        dotgit = f"{path}/.git" if path != "/" else "/.git"
        try:
            mode = os.lstat(dotgit).st_mode
        except FileNotFoundError:
            parent = os.path.dirname(path)
            if parent == path:
                return None
            path = parent
            continue
        except OSError:
            return None
        if stat.S_ISDIR(mode):
            if not os.path.isfile(f"{dotgit}/HEAD") or os.path.lexists(f"{dotgit}/commondir"):
                return None
            return RepoInfo(path, dotgit, path)
        if not stat.S_ISREG(mode):
            return None
        return _linked_worktree_info(path, dotgit)


def _linked_worktree_info(toplevel: str, dotgit: str) -> RepoInfo | None:
    try:
        with open(dotgit, encoding="utf-8") as handle:
            text = handle.read(4096).strip()
        if not text.startswith("gitdir: "):
            return None
        admin = os.path.realpath(os.path.join(toplevel, text[len("gitdir: "):]))
        with open(f"{admin}/commondir", encoding="utf-8") as handle:
            common = os.path.realpath(os.path.join(admin, handle.read(4096).strip()))
    except OSError:
        return None
    if os.path.dirname(admin) != f"{common}/worktrees" or os.path.basename(common) != ".git":
        return None  # a submodule, a bare repository's worktree, a separate git dir: ask git
    return RepoInfo(os.path.dirname(common), common, toplevel)


def _head_without_git(info: RepoInfo) -> str | None:
    """What HEAD of the worktree at `info.toplevel` holds: the ref it names, or its
    commit when detached; None when unsure (git is asked instead)."""
    dotgit = f"{info.toplevel}/.git"
    try:
        if os.path.isdir(dotgit) and not os.path.islink(dotgit):
            git_dir = dotgit
        else:
            with open(dotgit, encoding="utf-8") as handle:
                git_dir = os.path.join(info.toplevel, handle.read(4096).strip()[len("gitdir: "):])
        with open(f"{git_dir}/HEAD", encoding="utf-8") as handle:
            text = handle.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if text.startswith("ref: refs/"):
        ref = text[len("ref: "):]
        # reftable keeps a placeholder in the HEAD file; the real HEAD is in the table
        return None if ref == "refs/heads/.invalid" else ref
    if len(text) in (40, 64) and not text.strip("0123456789abcdef"):
        return text
    return None


def _repo_info(git: Git, result: Finished) -> RepoInfo:
    cwd = git.cwd
    if result.returncode != 0:
        raise NotARepository(
            f"{cwd} is not inside a git working tree; run vwt from a repository or pass -C DIR"
        )
    common_dir, toplevel = result.stdout.splitlines()[:2]
    common_dir = os.path.realpath(common_dir)
    if os.path.basename(common_dir) == ".git":
        repo_root = os.path.dirname(common_dir)
    else:
        repo_root = main_worktree(git) or common_dir
    return RepoInfo(os.path.realpath(repo_root), common_dir, os.path.realpath(toplevel))


def main_worktree(git: Git) -> str | None:
    entries = worktree_list(git)
    return entries[0]["worktree"] if entries else None


LIST_RETRIES = 8  # about 0.7 s in all


def met_a_worktree_being_added(message: str) -> bool:
    """git failed reading another worktree's admin folder (`.../worktrees/NAME/...`).

    A `git worktree add` running in another session writes those files one by one, and a
    git command that reads every worktree meanwhile dies ("failed to read
    .../worktrees/NAME/commondir"); a moment later they are whole, so a retry succeeds."""
    return "worktrees/" in message


def worktree_list(git: Git) -> list[dict[str, str]]:
    """`git worktree list --porcelain -z` as a list of {attribute: value}, retried while
    it meets a worktree another session is adding."""
    for attempt in range(LIST_RETRIES + 1):
        result = git.run("worktree", "list", "--porcelain", "-z", check=False)
        if result.returncode == 0:
            break
        if attempt == LIST_RETRIES or not met_a_worktree_being_added(result.stderr):
            raise git.failure(["worktree"], result.stderr)
        import time

        time.sleep(0.02 * (attempt + 1))
    out = result.stdout
    entries: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for field in out.split("\0"):
        if not field:
            if current:
                entries.append(current)
                current = {}
            continue
        key, _, value = field.partition(" ")
        current[key] = value
    if current:
        entries.append(current)
    return entries


def rev_parse(git: Git, rev: str) -> str | None:
    """The object id `rev` names, or None."""
    result = git.run("rev-parse", "--verify", "--quiet", "--end-of-options", rev, check=False)
    return result.stdout.strip() or None if result.returncode == 0 else None


def commit_of(git: Git, rev: str) -> str | None:
    return rev_parse(git, f"{rev}^{{commit}}")


def branch_tip(git: Git, branch: str) -> str | None:
    return rev_parse(git, f"refs/heads/{branch}")








def ask_remote_head_branch(git: Git, remote: str, timeout: float) -> str | None:
    """Ask the remote itself which branch HEAD names (network; never prompts)."""
    try:
        result = git.run(
            "ls-remote", "--symref", remote, "HEAD", check=False, timeout=timeout, new_session=True
        )
    except TimedOut:
        return None
    for line in result.stdout.splitlines():
        if line.startswith("ref: refs/heads/") and line.endswith("\tHEAD"):
            return line[len("ref: refs/heads/"):-len("\tHEAD")]
    return None


def fetch_branch(git: Git, remote: str, branch: str, timeout: float,
                 progress: bool = False) -> str | None:
    """Best-effort fetch of one branch; returns a warning or None on success."""
    refspec = f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}"
    try:
        result = git.run(
            "fetch", "--progress" if progress else "--quiet", "--no-tags",
            "--no-write-fetch-head", remote, refspec,
            check=False, timeout=timeout, new_session=True, show_progress=progress,
        )
    except TimedOut:
        return f"fetching {remote}/{branch} timed out after {timeout:g} s"
    if result.returncode != 0:
        return f"fetching {remote}/{branch} failed: {first_line(result.stderr)}"
    return None


def remotes(git: Git) -> list[str]:
    return git.out("remote").split()


def fetch_ref(git: Git, remote: str, ref: str, into: str, timeout: float) -> bool:
    """Fetch one ref of `remote` into local `into` (forced); False when it has none."""
    try:
        result = git.run("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote,
                         f"+{ref}:{into}", check=False, timeout=timeout, new_session=True)
    except TimedOut:
        raise GitFailed(f"fetching {ref} from {remote} timed out after {timeout:g} s") from None
    return result.returncode == 0


def worktree_add(
    git: Git, path: str, *, branch: str, start: str | None, create_branch: bool,
    workers: int = 1, progress: bool = False, no_checkout: bool = False,
) -> None:
    """`git worktree add` as the user would run it (hooks run; git's progress is passed on)."""
    args = ["worktree", "add"] + ([] if progress else ["--quiet"])
    if no_checkout:
        args.append("--no-checkout")
    if create_branch:
        args += ["--no-track", "-b", branch, path, start or "HEAD"]
    else:
        args += [path, branch]
    # Parallel checkout pays off on big trees only: below the threshold, workers cost more
    # to start than they save.
    config = ["-c", f"checkout.workers={workers}",
              "-c", f"checkout.thresholdForParallelism={PARALLEL_CHECKOUT_THRESHOLD}"]
    Git(git.cwd, housekeeping=False).run(*config, *args, show_progress=progress)


def sparse_checkout_set(git: Git, dirs: Sequence[str]) -> None:
    """Cone-mode sparse checkout of `dirs` (and the top-level files)."""
    git.run("sparse-checkout", "set", "--cone", "--", *dirs)


def checkout_head(git: Git) -> None:
    """Populate a `--no-checkout` worktree from HEAD (within its sparse set)."""
    git.run("checkout", "--quiet")  # no pathspec: one would bring back what the set leaves out


def file_at(git: Git, commit: str, path: str) -> bytes | None:
    """The bytes of `path` in `commit`, or None when it has no such file."""
    result = git.run("cat-file", "blob", f"{commit}:{path}", check=False)
    if result.returncode != 0:
        return None
    return result.stdout.encode("utf-8", "surrogateescape")  # the bytes, as git wrote them


def head_commit(git: Git) -> str:
    commit = rev_parse(git, "HEAD")
    if commit is None:
        raise GitFailed(f"{git.cwd} has no HEAD commit")
    return commit


class Status(NamedTuple):
    """What `git status --porcelain=v2` says about one working tree."""

    head: str | None
    branch: str | None  # None when detached
    changes: int
    untracked: int
    nested_repos: tuple[str, ...]  # untracked folders that hold a repository of their own
    dirty_submodules: tuple[str, ...]
    paths: tuple[str, ...] = ()  # every path an entry names (both sides of a rename)
    # (commits of the upstream not in HEAD, commits of HEAD not in the upstream), when asked
    ahead_behind: tuple[int, int] | None = None


def status(git: Git, upstream: tuple[str, str] | None = None,
           private_index: str | None = None) -> Status:
    """One call: changed and untracked entries, HEAD and branch. With `upstream`
    (branch, local ref), the same process also counts commits between that branch and the
    ref, as `left_right_counts(ref, HEAD)` would, by naming the ref the branch's upstream
    for this command only (`-c`; the repository's config is not touched).

    `private_index`: a copy of the worktree's index (made with its mtime) to read instead,
    which git may refresh and write: the files it had to re-hash (racily clean entries)
    are then known to a later `snapshot_tree` of the same copy, which does not hash them
    again. Without it git never writes the worktree's own index (no optional locks)."""
    config: list[str] = []
    if upstream is not None and "=" not in upstream[0]:
        config = ["-c", f"branch.{upstream[0]}.remote=.",
                  "-c", f"branch.{upstream[0]}.merge={upstream[1]}"]
    out = git.out(
        *config, "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all",
        *(["--ahead-behind"] if config else []),
        env={"GIT_INDEX_FILE": private_index} if private_index else {"GIT_OPTIONAL_LOCKS": "0"},
    )
    ahead_behind: tuple[int, int] | None = None
    head: str | None = None
    branch: str | None = None
    changes = untracked = 0
    nested: list[str] = []
    submodules: list[str] = []
    paths: list[str] = []
    fields = iter(out.split("\0"))
    for entry in fields:
        if not entry:
            continue
        kind = entry[0]
        if entry.startswith("# branch.oid "):
            oid = entry[len("# branch.oid "):]
            head = None if oid == "(initial)" else oid
        elif entry.startswith("# branch.head "):
            name = entry[len("# branch.head "):]
            branch = None if name == "(detached)" else name
        elif entry.startswith("# branch.ab ") and config:
            ahead_behind = _ahead_behind(entry[len("# branch.ab "):])
        elif kind == "?":
            changes += 1
            untracked += 1
            paths.append(entry[2:])
            if entry.endswith("/"):
                nested.append(entry[2:])
        elif kind in "12u":
            changes += 1
            parts = entry.split(" ", 8)
            sub = parts[2] if len(parts) > 2 else "N..."
            if sub.startswith("S") and (sub[2] == "M" or sub[3] == "U"):
                submodules.append(parts[-1])
            paths.append(entry.split(" ", _STATUS_FIELDS[kind])[-1])
            if kind == "2":
                paths.append(next(fields, ""))  # the rename's original path
    if upstream is None or branch != upstream[0]:
        ahead_behind = None
    return Status(head, branch, changes, untracked, tuple(nested), tuple(submodules),
                  tuple(paths), ahead_behind)


def _ahead_behind(text: str) -> tuple[int, int] | None:
    """`+A -B` of `# branch.ab` as (B, A); None when git could not count (`+? -?`)."""
    ahead, _, behind = text.partition(" ")
    if ahead[:1] == "+" and behind[:1] == "-" and ahead[1:].isdigit() and behind[1:].isdigit():
        return int(behind[1:]), int(ahead[1:])
    return None


_STATUS_FIELDS = {"1": 8, "2": 9, "u": 10}  # spaces before the path, per entry kind


def count_commits(git: Git, base: str, head: str) -> int:
    if base == head:
        return 0
    return int(git.out("rev-list", "--count", f"{base}..{head}").strip() or 0)


def changed_files(git: Git) -> list[tuple[str, str]]:
    """(XY status, path) of every `git status` entry, untracked included; a rename's
    path reads `old -> new`."""
    out = git.out("status", "--porcelain=v1", "-z", "--untracked-files=all",
                  env={"GIT_OPTIONAL_LOCKS": "0"})
    found = []
    fields = iter(out.split("\0"))
    for entry in fields:
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":
            path = f"{next(fields, '?')} -> {path}"
        found.append((code, path))
    return found


def untracked_files(git: Git) -> list[str]:
    out = git.out("ls-files", "-z", "--others", "--exclude-standard",
                  env={"GIT_OPTIONAL_LOCKS": "0"})
    return [path for path in out.split("\0") if path]


def commits_between(git: Git, base: str, head: str, limit: int) -> list[tuple[str, ...]]:
    """(commit, author, ISO date, subject) of `base..head`, newest first, at most `limit`."""
    out = git.out("log", f"--max-count={limit}", "-z", "--format=%H%x1f%an%x1f%aI%x1f%s",
                  f"{base}..{head}", "--")
    return [tuple(entry.split("\x1f", 3)) for entry in out.split("\0") if entry.strip()]


def diff_against(git: Git, base: str, index_file: str | None = None) -> str:
    """The working tree against `base` as a patch; never an external diff or textconv.
    `index_file`: an index to read paths from (untracked files added intent-to-add)."""
    env = {"GIT_OPTIONAL_LOCKS": "0", **({"GIT_INDEX_FILE": index_file} if index_file else {})}
    return git.out("diff", "--no-ext-diff", "--no-textconv", "--no-color", "-M", base, "--",
                   env=env)


def intend_to_add(git: Git, index_file: str, paths: Sequence[str]) -> None:
    """Record `paths` as intent-to-add in `index_file` (no file content is read or stored)."""
    git.run("add", "--intent-to-add", "--pathspec-from-file=-", "--pathspec-file-nul",
            input="".join(f"{p}\0" for p in paths),
            env={"GIT_INDEX_FILE": index_file, "GIT_OPTIONAL_LOCKS": "0"})


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


def files_using_filters(git: Git, drivers: Iterable[str],
                        paths: Sequence[str] | None = None) -> list[str]:
    """Tracked or untracked-not-ignored files (or just `paths`) whose `filter` attribute
    names one of `drivers`."""
    wanted = set(drivers)
    if not wanted:
        return []
    if paths is None:
        files = git.out("ls-files", "-z", "--cached", "--others", "--exclude-standard")
    else:
        files = "".join(f"{path}\0" for path in paths)
    if not files:
        return []
    out = git.out("check-attr", "-z", "--stdin", "filter", input=files)
    fields = out.split("\0")
    return sorted(
        {path for path, _attr, value in zip(fields[0::3], fields[1::3], fields[2::3],
                                             strict=False) if value in wanted}
    )


def snapshot_tree(git: Git, index_file: str) -> str:
    """Stage everything (untracked in, ignored out) into `index_file`; return the tree id."""
    env = {"GIT_INDEX_FILE": index_file}
    git.run("add", "--all", env=env)
    return git.out("write-tree", env=env).strip()


def commit_tree(git: Git, tree: str, parents: Sequence[str], message: str) -> str:
    args = ["commit-tree", "--no-gpg-sign", tree]
    for parent in parents:
        args += ["-p", parent]
    return git.out(*args, "-m", message, env=SNAPSHOT_IDENTITY).strip()


def update_refs(git: Git, commands: Sequence[str]) -> None:
    """Apply `update-ref --stdin` lines in one transaction."""
    if commands:
        git.run("update-ref", "--stdin", input="".join(f"{c}\n" for c in commands))


def set_ref(git: Git, ref: str, commit: str) -> None:
    git.run("update-ref", ref, commit)


def delete_ref(git: Git, ref: str, expected: str) -> bool:
    """Delete `ref` only while it still points at `expected`."""
    return git.ok("update-ref", "-d", ref, expected)


def branch_pointing_at(git: Git, commit: str) -> str | None:
    """The short name of a branch whose tip is `commit` (a local one first, then a
    remote-tracking one), or None."""
    out = git.out("for-each-ref", f"--points-at={commit}", "--format=%(refname)",
                  "refs/heads/", "refs/remotes/")
    refs = [r for r in out.splitlines() if r and not r.endswith("/HEAD")]
    for prefix in ("refs/heads/", "refs/remotes/"):
        for ref in refs:
            if ref.startswith(prefix):
                return ref[len(prefix):]
    return None


def ref_names(git: Git, prefix: str) -> list[str]:
    """Full names of the refs under `prefix` (such as `refs/vibe/reaped/`), sorted."""
    out = git.out("for-each-ref", "--format=%(refname)", prefix)
    return sorted(line for line in out.splitlines() if line)


def refs_merged_into_any(git: Git, prefix: str, commits: Sequence[str]) -> set[str]:
    """The refs under `prefix` whose tips some of `commits` contain (one call)."""
    if not commits:
        return set()
    args = [f"--merged={c}" for c in commits]
    out = git.out("for-each-ref", "--format=%(refname)", *args, prefix)
    return {line for line in out.splitlines() if line}


def branch_tips(git: Git, branches: Sequence[str]) -> dict[str, str]:
    """{branch: tip} for those of `branches` that exist, in one call."""
    if not branches:
        return {}
    wanted = set(branches)
    out = git.out("for-each-ref", "--format=%(refname)%00%(objectname)",
                  *(f"refs/heads/{b}" for b in branches))
    tips = {}
    for line in out.splitlines():
        ref, _, oid = line.partition("\0")
        branch = ref.removeprefix("refs/heads/")
        if branch in wanted:
            tips[branch] = oid
    return tips


def delete_branches(git: Git, expected: dict[str, str]) -> set[str]:
    """Delete each branch only if it still points where expected; returns those deleted.

    One transaction when all can go; one by one when any of them moved meanwhile.
    """
    if not expected:
        return set()
    commands = [f"delete refs/heads/{b} {oid}" for b, oid in expected.items()]
    if git.run("update-ref", "--stdin", input="".join(c + "\n" for c in commands),
               check=False).returncode == 0:
        return set(expected)
    return {b for b, oid in expected.items() if delete_branch(git, b, oid)}


def repo_merge_drivers(git: Git) -> tuple[str, ...]:
    """Merge drivers (`merge.<driver>.driver`) defined in the repository's own config."""
    out = git.out("config", "-z", "--show-scope", "--get-regexp", r"^merge\..+\.driver$",
                  check=False)
    fields = out.split("\0")
    found = {entry.split("\n", 1)[0][len("merge."):-len(".driver")]
             for scope, entry in zip(fields[0::2], fields[1::2], strict=False)
             if scope in ("local", "worktree")}
    return tuple(sorted(d for d in found if d))


def tree_of(git: Git, commit: str) -> str:
    return git.out("rev-parse", "--verify", "--end-of-options", f"{commit}^{{tree}}").strip()


def left_right_counts(git: Git, left: str, right: str) -> tuple[int, int]:
    """(commits of `left` not in `right`, commits of `right` not in `left`)."""
    out = git.out("rev-list", "--left-right", "--count", f"{left}...{right}").split()
    return int(out[0]), int(out[1])


def is_ancestor(git: Git, commit: str, of: str) -> bool:
    return git.ok("merge-base", "--is-ancestor", commit, of)


class MergedTree(NamedTuple):
    """`git merge-tree --write-tree`: the merged tree, or the conflicting paths."""

    tree: str | None  # None on a conflict
    conflicts: tuple[str, ...]


def merge_tree(git: Git, ours: str, theirs: str) -> MergedTree:
    """Merge two commits in the object store only: no index, no checkout is touched."""
    args = ["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages"]
    result = git.run(*args, ours, theirs, check=False)
    if result.returncode not in (0, 1):
        raise git.failure(["merge-tree"], result.stderr)
    fields = result.stdout.split("\0")
    if result.returncode == 0:
        return MergedTree(fields[0].strip(), ())
    return MergedTree(None, real_paths([f for f in fields[1:] if f], (ours, theirs)))


def real_paths(paths: Iterable[str], labels: Sequence[str]) -> tuple[str, ...]:
    """The repository's own paths of a merge's conflicts, each once. In a file/folder
    conflict git writes the file as `<path>~<label>` (the label: the commit as it was
    given) and lists that stand-in name; the path both sides changed is `<path>`."""
    suffixes = tuple(f"~{label}" for label in labels)
    found = []
    for path in paths:
        for suffix in suffixes:
            if path.endswith(suffix):
                path = path[:-len(suffix)]
                break
        found.append(path)
    return tuple(dict.fromkeys(found))


def trees_of(git: Git, commits: Sequence[str]) -> list[str | None]:
    """The tree of each commit, in one `cat-file --batch-check`."""
    if not commits:
        return []
    out = git.out("cat-file", "--batch-check=%(objectname) %(objecttype)",
                  input="".join(f"{c}^{{tree}}\n" for c in commits))
    found: list[str | None] = []
    for line in out.splitlines():
        oid, _, kind = line.partition(" ")
        found.append(oid if kind == "tree" else None)
    return found


def merge_trees(git: Git, pairs: Sequence[tuple[str, str]]) -> list[MergedTree]:
    """`merge_tree` of many (ours, theirs) pairs in one `merge-tree --stdin`."""
    if not pairs:
        return []
    result = git.run("merge-tree", "--stdin", "-z", "--name-only", "--no-messages",
                     input="".join(f"{ours} {theirs}\n" for ours, theirs in pairs), check=False)
    if result.returncode not in (0, 1):
        raise git.failure(["merge-tree"], result.stderr)
    found = []
    for record, pair in zip(result.stdout.split("\0\0"), pairs, strict=False):
        clean, tree, *paths = record.lstrip("\0").split("\0")
        found.append(MergedTree(tree, ()) if clean == "1"
                     else MergedTree(None, real_paths((p for p in paths if p), pair)))
    if len(found) != len(pairs):
        raise GitFailed("git merge-tree --stdin gave fewer results than merges asked")
    return found


def cherry_all_equivalent(git: Git, upstream: str, head: str) -> bool:
    """Every commit of `upstream..head` has a patch-equivalent commit in `upstream`."""
    out = git.out("cherry", upstream, head)
    lines = [line for line in out.splitlines() if line]
    return bool(lines) and all(line.startswith("- ") for line in lines)


class GraphCommit(NamedTuple):
    tree: str
    parents: tuple[str, ...]


def commit_graph(git: Git, include: Iterable[str], exclude: Iterable[str]
                 ) -> dict[str, GraphCommit]:
    """Every commit reachable from `include` and not from `exclude`, newest first, with
    its tree and parents: one `rev-list` (revisions on its stdin, so any number fits)."""
    revs = "".join(f"{c}\n" for c in dict.fromkeys(include))
    revs += "".join(f"^{c}\n" for c in dict.fromkeys(exclude))
    out = git.out("rev-list", "--format=%H %T %P", "--stdin", input=revs)
    graph: dict[str, GraphCommit] = {}
    for line in out.splitlines():
        if line and not line.startswith("commit "):
            oid, tree, *parents = line.split()
            graph[oid] = GraphCommit(tree, tuple(parents))
    return graph


def octopus_base(git: Git, commits: Sequence[str]) -> str | None:
    """A common ancestor of all `commits` (`merge-base --octopus`); None when none."""
    result = git.run("merge-base", "--octopus", *commits, check=False)
    if result.returncode not in (0, 1):
        raise GitFailed(f"git merge-base failed: {first_line(result.stderr)}")
    return result.stdout.split()[0] if result.stdout.split() else None


def patches(git: Git, diffs: Sequence[tuple[str, str | None]]) -> list[str]:
    """The patch of each (commit, base): `base` to `commit`, or `commit` against its only
    parent when `base` is None; all in one `diff-tree --stdin`. Plumbing: no external diff,
    no textconv, no renames; binary changes in full, so that two different binary edits
    never give the same patch."""
    if not diffs:
        return []
    lines = "".join(f"{commit} {base}\n" if base else f"{commit}\n" for commit, base in diffs)
    out = git.out("diff-tree", "--stdin", "-p", "--always", "--binary", "--no-ext-diff",
                  "--no-textconv", "--no-renames", "--no-color", "-r", input=lines)
    # Each diff starts with a line holding just its commit id (--always: even when empty).
    # No line of a patch can be a bare 40/64-hex id: patch lines start with a marker,
    # binary data lines have a length character before a multiple of five characters.
    found: list[str] = []
    start = 0
    for i, (commit, _base) in enumerate(diffs):
        header = f"{commit}\n"
        if not out.startswith(header, start):
            raise GitFailed("git diff-tree --stdin gave its diffs out of order")
        start += len(header)
        end = len(out)
        if i + 1 < len(diffs):
            following = f"{diffs[i + 1][0]}\n"
            end = start if out.startswith(following, start) else out.find(f"\n{following}",
                                                                           start) + 1
            if end <= 0:
                raise GitFailed("git diff-tree --stdin gave fewer diffs than asked")
        found.append(out[start:end])
        start = end
    return found


def patch_ids(git: Git, texts: Sequence[str]) -> list[str | None]:
    """`git patch-id --stable` of each patch, in one process; None for an empty patch."""
    wanted = [i for i, text in enumerate(texts) if text.strip()]
    feed = "".join(f"{i:040x}\n{texts[i]}" for i in wanted)
    found: list[str | None] = [None] * len(texts)
    if not feed:
        return found
    for line in git.out("patch-id", "--stable", input=feed).splitlines():
        pid, _, index = line.partition(" ")
        found[int(index, 16)] = pid
    return found


def commit_as_user(git: Git, tree: str, parents: Sequence[str], message: str,
                   author: dict[str, str] | None = None) -> str:
    """A commit with the user's identity (or `author`'s GIT_AUTHOR_* variables)."""
    args = ["commit-tree", "--no-gpg-sign", tree]
    for parent in parents:
        args += ["-p", parent]
    return git.out(*args, "-F", "-", input=message, env=author).strip()


class CommitInfo(NamedTuple):
    commit: str
    parent: str | None
    author: dict[str, str]  # GIT_AUTHOR_NAME, _EMAIL, _DATE
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]


def commits_to_replay(git: Git, base: str, head: str, onto: str) -> list[CommitInfo]:
    """The commits of `base..head` that `onto` has no patch-equivalent of, oldest first,
    merge commits left out (as `git rebase` does)."""
    out = git.out("log", "--reverse", "--no-merges", "--cherry-pick", "--right-only",
                  "-z", "--format=%H%x01%P%x01%an%x01%ae%x01%ad%x01%B", "--date=raw",
                  f"{onto}...{head}", f"^{base}")
    found = []
    for record in out.split("\0"):
        if not record.strip():
            continue
        commit, parents, name, email, date, message = record.lstrip("\n").split("\x01", 5)
        found.append(CommitInfo(
            commit, parents.split()[0] if parents.split() else None,
            {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": f"@{date}"},
            message,
        ))
    return found


def own_commits(git: Git, base: str, head: str) -> list[CommitInfo]:
    """`base..head`, oldest first (merges included): what a squash message summarises."""
    out = git.out("log", "--reverse", "-z", "--format=%H%x01%P%x01%B", f"{base}..{head}")
    found = []
    for record in out.split("\0"):
        if record.strip():
            commit, parents, message = record.lstrip("\n").split("\x01", 2)
            first_parent = parents.split()[0] if parents.split() else None
            found.append(CommitInfo(commit, first_parent, {}, message))
    return found


class RefUpdate(NamedTuple):
    """The latest entry of a ref's reflog."""

    old: str | None  # None when the entry created the ref (or the one before is gone)
    new: str
    reason: str  # the `-m` message of the update (`vwt sync NAME`, `commit: ...`)


def last_update(git: Git, ref: str) -> RefUpdate | None:
    """How `ref` last moved, from its reflog; None without one (reflogs can be off)."""
    result = git.run("log", "-g", "-2", "--no-decorate", "--format=%H%x00%gs", ref, "--",
                     check=False)
    entries = [line.split("\0", 1) for line in result.stdout.splitlines() if "\0" in line]
    if result.returncode != 0 or not entries:
        return None
    new, reason = entries[0]
    return RefUpdate(entries[1][0] if len(entries) > 1 else None, new, reason)


def compare_and_swap(git: Git, ref: str, new: str, old: str, reason: str) -> bool:
    """Point `ref` at `new` only while it still points at `old`; False when it moved (a
    full disk is an error of its own, never reported as a moved ref)."""
    result = git.run("update-ref", "-m", reason, ref, new, old, check=False)
    if result.returncode != 0 and says_disk_full(result.stderr):
        raise git.failure(["update-ref"], result.stderr)
    return result.returncode == 0


def changed_files_using_filters(git: Git, old: str, new: str, drivers: Iterable[str]
                                ) -> list[str]:
    """Files that differ between `old` and `new` whose `filter` attribute names one of
    `drivers` (checking them out would need the driver)."""
    wanted = set(drivers)
    if not wanted:
        return []
    paths = git.out("diff", "--name-only", "-z", "--no-renames", old, new)
    if not paths:
        return []
    out = git.out("check-attr", "-z", "--stdin", "filter", input=paths)
    fields = out.split("\0")
    return sorted({path for path, _attr, value in zip(fields[0::3], fields[1::3], fields[2::3],
                                                       strict=False) if value in wanted})


def move_checkout_check(git: Git, old: str, new: str) -> str | None:
    """Why moving this checkout from `old` to `new` (as `git merge --ff-only` would) would
    overwrite local changes, untracked files in the way included; None when it would not.
    Asked of a private copy of its index: nothing of the checkout is written or locked."""
    from .index_files import private_copy

    copy = private_copy(index_path(git))
    try:
        env = {"GIT_INDEX_FILE": copy}
        git.run("update-index", "-q", "--refresh", env=env, check=False)
        return _checkout_problem(git, git.run("read-tree", "-m", "-u", "-n", old, new, env=env,
                                              check=False))
    finally:
        for leftover in (copy, f"{copy}.lock"):
            with suppress(FileNotFoundError):
                os.unlink(leftover)


def move_checkout(git: Git, old: str, new: str) -> str | None:
    """Two-tree merge of index and files from `old` to `new`, keeping unrelated local
    changes; the error line, or None (see `checkout_move`)."""
    from .index_files import IndexBusy

    try:
        with checkout_move(git, old, new) as move:
            problem = move.run()
            if problem:
                raise NotMoved(problem)
    except IndexBusy as busy:
        return f"another git process holds {busy}"
    except NotMoved as stop:
        return stop.problem
    return None


class InTheWay(NamedTuple):
    """A checkout's local changes that moving it to another commit would overwrite."""

    changed: tuple[str, ...]  # tracked files changed there, staged or not
    untracked: tuple[str, ...]


def in_the_way(git: Git, old: str, new: str) -> InTheWay:
    """What stops moving this checkout from `old` to `new` (`move_checkout_check`'s
    reason, by path): the files it changed that the move changes, and its untracked files
    where the move writes a file, or a folder of one (or a file where they are a folder)."""
    moving = set(changed_paths(git, old, new))
    moving_folders = {path[:i] for path in moving for i, c in enumerate(path) if c == "/"}
    out = git.out("status", "--porcelain", "-z", "--untracked-files=all", "--no-renames",
                  env={"GIT_OPTIONAL_LOCKS": "0"})
    changed: list[str] = []
    untracked: list[str] = []
    for entry in filter(None, out.split("\0")):
        path = entry[3:]
        folders = (path[:i] for i, c in enumerate(path) if c == "/")
        if path in moving or path in moving_folders or any(f in moving for f in folders):
            (untracked if entry.startswith("??") else changed).append(path)
    return InTheWay(tuple(sorted(changed)), tuple(sorted(untracked)))


class CheckoutMove(NamedTuple):
    git: Git
    old: str
    new: str
    index_copy: str

    def run(self) -> str | None:
        """Move the files, and the private copy of the index, from `old` to `new`; git's
        reason when it cannot (local changes in the way), or None."""
        env = {"GIT_INDEX_FILE": self.index_copy}
        self.git.run("update-index", "-q", "--refresh", env=env, check=False)
        return _checkout_problem(self.git, self.git.run("read-tree", "-m", "-u", self.old,
                                                        self.new, env=env, check=False))


@contextmanager
def checkout_move(git: Git, old: str, new: str) -> Iterator[CheckoutMove]:
    """Hold git's lock on the checkout's index for a move from `old` to `new`, from before
    its branch moves until its files have: git writes a private copy of the index, which
    replaces the index when the block ends without an exception. A kill leaves a lock that
    the next `vwt merge`, `vwt sync` or `vwt prune` recognises as a dead vwt's and whose move it
    finishes (`index_files.repair_repo`). IndexBusy: another git holds the lock."""
    from .index_files import MOVE, locked_index

    with locked_index(index_path(git), f"{MOVE} {old} {new}") as copy:
        yield CheckoutMove(git, old, new, copy)


class NotMoved(Exception):
    """A checkout move stopped before its index was replaced; `problem` says why."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def index_path(git: Git) -> str:
    """The absolute path of the index of the checkout `git` runs in."""
    path = git.out("rev-parse", "--path-format=absolute", "--git-path", "index").strip()
    return path


def index_matches(git: Git, tree: str) -> bool:
    """The checkout's index holds exactly `tree` (stat data aside)."""
    return git.run("diff-index", "--cached", "--quiet", tree, "--", check=False,
                   env={"GIT_OPTIONAL_LOCKS": "0"}).returncode == 0


def _checkout_problem(git: Git, result: Finished) -> str | None:
    """git's reason a checkout cannot move, or None; a full disk is not such a reason, but
    an error of its own (the checkout has no local changes in the way)."""
    if result.returncode == 0:
        return None
    if says_disk_full(result.stderr):
        raise git.failure(["read-tree"], result.stderr)
    return first_line(result.stderr)


def reset_keep(git: Git, commit: str) -> None:
    git.run("reset", "-q", "--keep", commit)


# -- a rebase left stopped in a worktree for the user to resolve (`vwt sync --stop-on-conflict`) --

# Nothing of the user's rebase settings that would touch more than the worktree's branch,
# and no editor: vwt is not interactive.
_REBASE_CONFIG = (("rebase.autoStash", "false"), ("rebase.updateRefs", "false"),
                  ("rebase.autoSquash", "false"))
_NO_EDITOR = {"GIT_EDITOR": "true", "GIT_SEQUENCE_EDITOR": "true"}


def _rebasing(git: Git) -> Git:
    return git._replace(extra_config=(*git.extra_config, *_REBASE_CONFIG))


def rebase_onto(git: Git, onto: str, upstream: str) -> Finished:
    """`git rebase --onto ONTO UPSTREAM` of the checked-out branch; stops at a conflict
    (exit status not 0, the rebase left in progress)."""
    return _rebasing(git).run("rebase", "--merge", "--no-autostash", "--onto", onto, upstream,
                              env=_NO_EDITOR, check=False)


def rebase_continue(git: Git) -> Finished:
    return _rebasing(git).run("rebase", "--continue", env=_NO_EDITOR, check=False)


def rebase_abort(git: Git) -> None:
    _rebasing(git).run("rebase", "--abort", env=_NO_EDITOR)


def unmerged_paths(git: Git) -> list[str]:
    """The repository's paths with unresolved conflicts in the index. In a file/folder
    conflict git leaves the file as `<path>~<label>` (`df~HEAD`, `df~1a2b3c4 (subject)`)
    beside the folder `<path>/`, and lists that stand-in name: the path is `<path>`."""
    env = {"GIT_OPTIONAL_LOCKS": "0"}
    out = git.out("diff", "--name-only", "-z", "--diff-filter=U", env=env)
    paths = [path for path in out.split("\0") if path]
    if any("~" in path for path in paths):
        indexed = git.out("ls-files", "-z", env=env).split("\0")
        folders = {path[:i] for path in indexed for i, c in enumerate(path) if c == "/"}
        paths = [_clashing_path(path, folders) for path in paths]
    return sorted(dict.fromkeys(paths))


def _clashing_path(path: str, folders: set[str]) -> str:
    """`<path>` of a stand-in `<path>~<label>` whose `<path>` is a folder in the index (git
    puts no `/` in the label); `path` itself when it is no such stand-in."""
    start = path.rfind("/") + 1
    for i in range(start, len(path)):
        if path[i] == "~" and path[:i] in folders:
            return path[:i]
    return path


def add_all_and_commit(git: Git, message: str) -> None:
    """Commit everything (untracked included, ignored excluded) with the user's identity."""
    git.run("add", "--all")
    git.run("commit", "-q", "--no-verify", "-F", "-", input=message)


def map_parallel(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """`fn` over `items` on a small thread pool: git processes run side by side."""
    if len(items) <= 1:
        return [fn(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor  # imports logging: only when needed

    with ThreadPoolExecutor(pool_size()) as pool:
        return list(pool.map(fn, items))


def pool_size() -> int:
    return max(2, min(8, 2 * (os.cpu_count() or 1)))


def delete_branch(git: Git, branch: str, expected: str | None = None) -> bool:
    """Delete refs/heads/<branch>, only if it still points at `expected` when given."""
    args = ["update-ref", "-d", f"refs/heads/{branch}"]
    if expected:
        args.append(expected)
    return git.ok(*args)


def contained_elsewhere(git: Git, commit: str, but: str) -> bool:
    """Some branch, tag or remote-tracking branch other than the ref `but` contains `commit`."""
    out = git.out("for-each-ref", f"--contains={commit}", "--format=%(refname)",
                  "refs/heads/", "refs/tags/", "refs/remotes/")
    return any(ref != but for ref in out.split())


def worktree_remove_entry(git: Git, path: str) -> bool:
    """Unregister a worktree whose checkout was already moved away."""
    return git.ok("worktree", "remove", "--force", "--force", path)


def worktree_prune(git: Git) -> None:
    git.run("worktree", "prune", check=False)


def checked_out_branches(git: Git) -> dict[str, str]:
    """{branch: worktree path} for every branch some worktree has checked out."""
    found = {}
    for entry in worktree_list(git):
        ref = entry.get("branch", "")
        if ref.startswith("refs/heads/"):
            found[ref[len("refs/heads/"):]] = entry.get("worktree", "?")
    return found


def branch_checked_out_elsewhere(git: Git, branch: str) -> str | None:
    """Path of a worktree that has `branch` checked out, if any."""
    for entry in worktree_list(git):
        if entry.get("branch") == f"refs/heads/{branch}":
            return entry.get("worktree")
    return None


# -- trees and merges: what two lines of work would do to each other -------------------------

def changed_paths(git: Git, old: str, new: str) -> list[str]:
    """Paths that differ between two trees or commits; a rename counts as both its paths."""
    out = git.out("diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new)
    return [path for path in out.split("\0") if path]


def changed_paths_many(git: Git, pairs: Sequence[tuple[str, str]]) -> list[list[str]]:
    """`changed_paths` of many (old, new) pairs: one `cat-file` for their trees, one
    `diff-tree --stdin`."""
    if not pairs:
        return []
    objects = list(dict.fromkeys(oid for pair in pairs for oid in pair))
    tree_of = dict(zip(objects, trees_of(git, objects), strict=True))
    if None in tree_of.values():
        missing = next(oid for oid, tree in tree_of.items() if tree is None)
        raise GitFailed(f"git cannot read the tree of {missing}")
    headers = [f"{tree_of[old]} {tree_of[new]}\n" for old, new in pairs]
    out = git.out("diff-tree", "--stdin", "-r", "-z", "--name-only", "--no-renames",
                  input="".join(headers))
    # Per pair: its line echoed (always, even when the trees are equal), then each path
    # and a NUL. A line holds no NUL, so the next one starts right after a NUL.
    found: list[list[str]] = []
    pos = 0
    for i, header in enumerate(headers):
        if not out.startswith(header, pos):
            raise GitFailed("git diff-tree --stdin gave its diffs out of order")
        pos += len(header)
        following = headers[i + 1] if i + 1 < len(headers) else None
        paths: list[str] = []
        while pos < len(out) and not (following and out.startswith(following, pos)):
            end = out.find("\0", pos)
            if end < 0:
                raise GitFailed("git diff-tree --stdin gave a cut-off path")
            paths.append(out[pos:end])
            pos = end + 1
        found.append(paths)
    return found


def tree_paths(git: Git, tree: str) -> set[str]:
    """Every file path of a tree or commit."""
    out = git.out("ls-tree", "-r", "-z", "--name-only", "--full-tree", tree)
    return {path for path in out.split("\0") if path}


def merge_base(git: Git, a: str, b: str) -> str | None:
    """The best common ancestor of two commits; None when their histories are unrelated."""
    result = git.run("merge-base", a, b, check=False)
    if result.returncode == 1:
        return None
    if result.returncode != 0:
        raise git.failure(["merge-base"], result.stderr)
    return result.stdout.strip() or None


def tips_containing(git: Git, commit: str, branches: Iterable[str]) -> set[str]:
    """The tips of those of `branches` whose history contains `commit`, in one call."""
    patterns = [f"refs/heads/{b}" for b in dict.fromkeys(branches)]
    if not patterns:
        return set()
    out = git.out("for-each-ref", f"--contains={commit}", "--format=%(objectname)", *patterns)
    return set(out.split())


def merge_many(git: Git, merges: Sequence[tuple[str, str]]) -> list[MergedTree | str]:
    """Merge each (ours, theirs) pair of commits without touching any checkout or ref, all
    in one `git merge-tree --stdin` while git accepts them; a merge git refuses (unrelated
    histories) gives its one-line reason instead, and the rest go on in a new process."""
    results: list[MergedTree | str] = []
    while len(results) < len(merges):
        pending = merges[len(results):]
        run = git.run("merge-tree", "--write-tree", "--stdin", "-z", "--name-only",
                      "--no-messages", input="".join(f"{a} {b}\n" for a, b in pending),
                      check=False)
        results += [MergedTree(None, real_paths(m.conflicts, pair)) if m.tree is None else m
                    for m, pair in zip(_merged_records(run.stdout), pending, strict=False)]
        if run.returncode != 0 and len(results) < len(merges):
            results.append(first_line(run.stderr))  # the merge git stopped at
    return results


def _merged_records(out: str) -> list[MergedTree]:
    """`<status>\\0<tree>\\0<path>\\0...\\0\\0` per merge; a cut-off last record is dropped."""
    fields = out.split("\0")
    records: list[MergedTree] = []
    i = 0
    while i + 1 < len(fields) and fields[i] in ("0", "1"):
        clean, tree, paths = fields[i] == "1", fields[i + 1], []
        j = i + 2
        while j < len(fields) and fields[j]:
            paths.append(fields[j])
            j += 1
        if j >= len(fields):
            break
        records.append(MergedTree(tree if clean else None, tuple(dict.fromkeys(paths))))
        i = j + 1
    return records


GITLINK = "160000"


def tree_entries(git: Git, tree: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, object id) of every entry of `tree`, recursively."""
    out = git.out("ls-tree", "-r", "-z", "--full-tree", tree)
    found = {}
    for line in out.split("\0"):
        if line:
            meta, _, path = line.partition("\t")
            mode, _kind, oid = meta.split(" ")
            found[path] = (mode, oid)
    return found


def blob_contents(git: Git, oids: Sequence[str]) -> dict[str, bytes]:
    """The contents of blobs, by one `git cat-file --batch`."""
    wanted = list(dict.fromkeys(oids))
    if not wanted:
        return {}
    out = git.out("cat-file", "--batch", input="".join(f"{o}\n" for o in wanted)).encode(
        "utf-8", "surrogateescape")  # the bytes, as git wrote them
    found: dict[str, bytes] = {}
    at = 0
    for oid in wanted:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split(b" ")[2])
        found[oid] = out[header_end + 1:header_end + 1 + size]
        at = header_end + 1 + size + 1
    return found


def undo_checkout_move(git: Git, old: str, new: str) -> list[str]:
    """Put a checkout back at `old` after moving it to `new` failed part-way (a full disk
    stopped `read-tree -m -u` or `reset --keep`): its index and HEAD still say `old`, but
    some files may hold `new`'s version, whole or cut short. Each such file is put back as
    `old` has it (or removed, when `old` has none); a file holding anything else is left
    alone. Returns the paths left alone."""
    paths = changed_paths(git, old, new)
    if not paths:
        return []
    before, after = tree_entries(git, old), tree_entries(git, new)
    contents = blob_contents(git, [after[p][1] for p in paths
                                   if p in after and after[p][0] != GITLINK])
    back, left = [], []
    for path in paths:
        current = _file_bytes(os.path.join(git.cwd, path))
        wanted = after.get(path)
        written_by_the_move = current is None or (
            isinstance(current, bytes) and wanted is not None and wanted[0] != GITLINK
            and contents[wanted[1]].startswith(current))
        if not written_by_the_move:
            left.append(path)
        elif path in before:
            back.append(path)
        elif current is not None:
            os.unlink(os.path.join(git.cwd, path))
            _remove_empty_parents(git.cwd, path)
    if back:
        git.run("checkout-index", "-f", "-z", "--stdin", input="".join(f"{p}\0" for p in back))
    return left


def _file_bytes(path: str) -> bytes | bool | None:
    """A file's bytes (a symlink's target), None when nothing is there, False for anything
    else (a folder)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return False
    if stat.S_ISLNK(mode):
        return os.fsencode(os.readlink(path))
    if not stat.S_ISREG(mode):
        return False
    with open(path, "rb") as handle:
        return handle.read()


def _remove_empty_parents(top: str, path: str) -> None:
    folder = os.path.dirname(path)
    while folder:
        try:
            os.rmdir(os.path.join(top, folder))
        except OSError:
            return
        folder = os.path.dirname(folder)
