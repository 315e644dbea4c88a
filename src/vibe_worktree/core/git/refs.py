"""Refs and objects: branches, commits, trees, merges in the object store, fetches.

Nothing here touches a checkout's files or index.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..errors import GitFailed, says_disk_full
from ..light import NamedTuple
from ..processes import TimedOut
from .runner import SNAPSHOT_IDENTITY, Git, first_line


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


def count_commits(git: Git, base: str, head: str) -> int:
    if base == head:
        return 0
    return int(git.out("rev-list", "--count", f"{base}..{head}").strip() or 0)


def commits_between(git: Git, base: str, head: str, limit: int) -> list[tuple[str, ...]]:
    """(commit, author, ISO date, subject) of `base..head`, newest first, at most `limit`."""
    out = git.out("log", f"--max-count={limit}", "-z", "--format=%H%x1f%an%x1f%aI%x1f%s",
                  f"{base}..{head}", "--")
    return [tuple(entry.split("\x1f", 3)) for entry in out.split("\0") if entry.strip()]


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
