"""A full disk, SPEC section 16: each command succeeds or says the disk is full, loses nothing.

The home and the repository (a clone of a bare origin) live on a size-limited tmpfs. The
disk is filled to leave K bytes free, then one command runs. It either succeeds or exits 1
with one line on stderr saying the disk is full (and what to do); no traceback; no record,
recovery or approvals file is left empty or half written. Once the filler is deleted,
`vwt prune` repairs (or `vwt doctor` names the same command as what finishes it: an
interrupted restore's half-made checkout), the same command run again succeeds, and every
file the user wrote is in its checkout, on the landed commit, or in a snapshot that
`vwt restore` brings back.

``COMMANDS`` is the table of cases: to cover another command (adopt, a pooled `new`), add a
``Case`` with what it needs set up, its arguments and what must hold once it succeeded.
The default run tries a handful of K values; the ``slow`` sweep tries every page up to what
the largest command needs.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import GitRepo, Run, Sandbox
from .fulldisk import (
    PAGE,
    SmallDisk,
    assert_disk_full_message,
    assert_state_files_whole,
    mounted_small_disk,
)

pytestmark = pytest.mark.timeout(180)

WORK = {
    "README.md": "# demo\nedited by the user\n",  # tracked, modified
    "work/untracked.txt": "untracked work\n",  # untracked
}


def write_files(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)


def files_in(folder: Path, files: dict[str, str]) -> bool:
    return all((folder / rel).is_file() and (folder / rel).read_text() == text
               for rel, text in files.items())


def restored_files(repo: GitRepo, name: str, files: dict[str, str]) -> None:
    """`name` was removed with a snapshot: `vwt restore` brings `files` back."""
    restored = repo.ok("restore", name, "--json")
    assert files_in(Path(restored.json()["path"]), files), f"{name}: restored files differ"


def new_with_work(repo: GitRepo, name: str) -> Path:
    checkout = Path(repo.ok("new", name, "--json").json()["path"])
    write_files(checkout, WORK)
    return checkout


def new_with_commit(repo: GitRepo, name: str) -> Path:
    checkout = Path(repo.ok("new", name, "--json").json()["path"])
    repo.commit(f"{name} work", {f"{name}.txt": f"{name} committed\n"}, cwd=checkout)
    return checkout


# -- the cases ----------------------------------------------------------------------------------

def _new_verify(repo: GitRepo) -> None:
    assert (repo.checkout("feat") / "README.md").is_file()


def _restore_prepare(repo: GitRepo) -> None:
    new_with_work(repo, "feat")
    repo.ok("rm", "feat", "-y")


def _restore_verify(repo: GitRepo) -> None:
    assert files_in(repo.checkout("feat"), WORK)


def _snapshot_verify(repo: GitRepo) -> None:
    assert repo.git("show", "refs/vibe/reaped/feat:work/untracked.txt") == "untracked work"
    assert files_in(repo.checkout("feat"), WORK)


def _rm_verify(repo: GitRepo) -> None:
    assert not repo.checkout("feat").exists()
    restored_files(repo, "feat", WORK)


def _prune_prepare(repo: GitRepo) -> None:
    new_with_work(repo, "one")
    new_with_work(repo, "two")


def _prune_verify(repo: GitRepo) -> None:
    for name in ("one", "two"):
        assert not repo.checkout(name).exists()
        restored_files(repo, name, WORK)


def _merge_verify(repo: GitRepo) -> None:
    assert repo.git("show", "main:feat.txt") == "feat committed"
    assert (repo.path / "feat.txt").read_text() == "feat committed\n"  # main checkout moved
    assert repo.git("status", "--porcelain") == ""


def _sync_prepare(repo: GitRepo) -> None:
    new_with_commit(repo, "feat")
    repo.commit("main moves on", {"main.txt": "on main\n"})


def _sync_verify(repo: GitRepo) -> None:
    checkout = repo.checkout("feat")
    assert (checkout / "main.txt").read_text() == "on main\n"
    assert (checkout / "feat.txt").read_text() == "feat committed\n"


def _move_prepare(repo: GitRepo) -> None:
    write_files(repo.path, WORK)


def _move_verify(repo: GitRepo) -> None:
    assert files_in(repo.checkout("moved"), WORK)
    assert repo.git("status", "--porcelain") == "", "the work stayed in the main checkout too"


def _approvals_prepare(repo: GitRepo) -> None:
    hooks = repo.path / ".vibe" / "worktree.toml"
    hooks.parent.mkdir()
    hooks.write_text('[[hooks]]\ntype = "post_create"\nname = "deps"\ncommand = "true"\n'
                     '[[hooks]]\ntype = "post_create"\nname = "more"\ncommand = "true"\n')
    repo.ok("hooks", "approve", "deps")


def _approvals_verify(repo: GitRepo) -> None:
    assert "more" in repo.sb.vibe_home.joinpath("worktree-approvals.json").read_text()


def _adopt_prepare(repo: GitRepo) -> None:
    """A worktree Claude Code made inside the repository, with work in it."""
    made = repo.path / ".claude" / "worktrees" / "feat"
    repo.git("worktree", "add", "-q", "-b", "worktree-feat", str(made))
    write_files(made, WORK)


def _adopt_verify(repo: GitRepo) -> None:
    assert files_in(repo.checkout("feat"), WORK)
    assert not (repo.path / ".claude" / "worktrees" / "feat").exists()


def _pool_prepare(repo: GitRepo) -> None:
    """A warm pool of one ready worktree (the user's config asks for it)."""
    repo.sb.vibe_home.mkdir(parents=True, exist_ok=True)
    (repo.sb.vibe_home / "worktree.toml").write_text("[pool]\nsize = 1\n")
    repo.ok("pool", "fill")


# a hook that leaves what a venv leaves: a script naming the folder it was made in
VENV_HOOK = ('[[hooks]]\nname = "venv"\ntype = "post_create"\ncommand = "mkdir -p .venv/bin '
             '&& printf \'#!%s/.venv/bin/python\\\\n\' \\"$(pwd -P)\\" > .venv/bin/tool"\n')


def _pool_relocated_prepare(repo: GitRepo) -> None:
    """A pool entry whose hook wrote a script naming the entry's folder, and a
    `.worktreeinclude` file changed in the main checkout since the fill: the take rewrites
    one and copies the other again, on the full disk."""
    (repo.path / ".git" / "info" / "exclude").write_text(".venv/\n.env\n.worktreeinclude\n")
    (repo.path / ".worktreeinclude").write_text(".env\n")
    (repo.path / ".env").write_text("SECRET=one\n")
    repo.sb.vibe_home.mkdir(parents=True, exist_ok=True)
    (repo.sb.vibe_home / "worktree.toml").write_text(f"[pool]\nsize = 1\n\n{VENV_HOOK}")
    repo.ok("pool", "fill")
    stamp = (repo.path / ".env").stat().st_mtime_ns + 2_000_000_000
    (repo.path / ".env").write_text("SECRET=two\n")
    os.utime(repo.path / ".env", ns=(stamp, stamp))


def _pool_relocated_verify(repo: GitRepo) -> None:
    """Whether it came from the pool (relocated) or, once a failed try gave its entry up, was
    made the slow way (where the hook itself may have met the full disk: a failed setup,
    left to `vwt new feat` again), the script never names the pool's folder."""
    checkout = repo.checkout("feat")
    script = (checkout / ".venv/bin/tool").read_text()
    assert script in ("", f"#!{checkout}/.venv/bin/python\n"), script
    assert (checkout / ".env").read_text() == "SECRET=two\n"


def _nothing(repo: GitRepo) -> None:
    pass


@dataclass(frozen=True)
class Case:
    """One command under a full disk: `prepare` runs while there is space, `args` once the
    disk is full (and again after a failure), `verify` once the command succeeded."""

    args: tuple[str, ...]
    prepare: Callable[[GitRepo], object]
    verify: Callable[[GitRepo], None]


COMMANDS: dict[str, Case] = {
    "new": Case(("new", "feat", "--json"), _nothing, _new_verify),
    "restore": Case(("restore", "feat", "--json"), _restore_prepare, _restore_verify),
    "snapshot": Case(("snapshot", "feat", "--json"), lambda r: new_with_work(r, "feat"),
                     _snapshot_verify),
    "rm -y": Case(("rm", "feat", "-y", "--json"), lambda r: new_with_work(r, "feat"), _rm_verify),
    "prune": Case(("prune", "--keep", "0", "--json"), _prune_prepare, _prune_verify),
    "merge": Case(("merge", "feat", "--json"), lambda r: new_with_commit(r, "feat"),
                  _merge_verify),
    "sync": Case(("sync", "feat", "--json"), _sync_prepare, _sync_verify),
    "new --move": Case(("new", "moved", "--move", "--json"), _move_prepare, _move_verify),
    "new from the pool": Case(("new", "feat", "--json"), _pool_prepare, _new_verify),
    "new from the pool, relocated": Case(("new", "feat", "--json"), _pool_relocated_prepare,
                                         _pool_relocated_verify),
    "adopt": Case(("adopt", ".claude/worktrees/feat", "--json"), _adopt_prepare, _adopt_verify),
    "hooks approve": Case(("hooks", "approve", "more"), _approvals_prepare, _approvals_verify),
}

# bytes left free: none, a page, a few pages, and more than most commands write
# (one and eight pages only with -m slow: the sweep below covers every size there too)
K_VALUES = (0, pytest.param(PAGE, marks=pytest.mark.slow),
            pytest.param(8 * PAGE, marks=pytest.mark.slow), 64 * PAGE)
MOST_PAGES = 1024  # 4 MiB: far more than any of these commands writes for this repository


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    yield from mounted_small_disk(tmp_path / "disk")


def setup(disk: SmallDisk, case: Case) -> tuple[Sandbox, GitRepo]:
    (disk.path / "sandbox").mkdir()
    sb = Sandbox(disk.path / "sandbox")
    repo = sb.make_origin_clone()
    case.prepare(repo)
    return sb, repo


def attempt(disk: SmallDisk, sb: Sandbox, repo: GitRepo, case: Case, leave: int) -> Run:
    """Run the command with `leave` bytes free: it succeeds, or it says the disk is full and
    leaves what `vwt prune` repairs into a state `vwt doctor` calls healthy."""
    disk.fill(leave=leave)
    run = repo.vwt(*case.args)
    context = f"K={leave}\n{run}"
    assert run.returncode in (0, 1), context
    if run.returncode == 1:
        assert_disk_full_message(run.stderr, context)
    assert_state_files_whole(sb.vibe_home)
    disk.drain()
    if run.returncode == 1:
        repo.ok("prune")
        doctor = repo.vwt("doctor", "--json")
        again = " ".join(case.args[:2])  # a half-made checkout that running it again finishes
        left = [p for p in json.loads(doctor.stdout)["problems"]
                if not (p["kind"] == "half_made_checkout" and p["fix"].endswith(again))]
        assert not left, f"not healthy after the repair\n{context}\n{doctor}"
    return run


def run_on_full_disk(disk: SmallDisk, case: Case, leave: int) -> Run:
    """The whole story for one command and one K (see the module docstring)."""
    sb, repo = setup(disk, case)
    first = attempt(disk, sb, repo, case, leave)
    if first.returncode == 1:
        repo.ok(*case.args)
    repo.ok("prune")
    assert repo.vwt("doctor").returncode == 0
    case.verify(repo)
    assert sb.sentinel.read_text() == "must survive\n"
    return first


@pytest.mark.parametrize("leave", K_VALUES)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_command_on_a_full_disk_succeeds_or_says_so_and_loses_nothing(
        small_disk: SmallDisk, command: str, leave: int) -> None:
    first = run_on_full_disk(small_disk, COMMANDS[command], leave)
    if command.startswith("new from the pool") and first.returncode == 0:
        assert first.json()["pooled"] is True, "the case did not take a pool entry"


@pytest.mark.slow
@pytest.mark.parametrize("command", list(COMMANDS))
def test_command_tried_with_every_page_free_until_it_fits(small_disk: SmallDisk,
                                                          command: str) -> None:
    """K = 0, one page, two pages, ... : each failed try is repaired, and the next one,
    with a page more, starts from what the failure and the repair left."""
    case = COMMANDS[command]
    sb, repo = setup(small_disk, case)
    for pages in range(MOST_PAGES):
        if attempt(small_disk, sb, repo, case, pages * PAGE).returncode == 0:
            break
    else:
        pytest.fail(f"{command} still failed with {MOST_PAGES} pages free")
    print(f"{command}: failed with 0 to {pages - 1} pages free, succeeded with {pages}")
    case.verify(repo)
    assert sb.sentinel.read_text() == "must survive\n"


# -- the atomic writer itself -------------------------------------------------------------------

def test_a_state_file_written_on_a_full_disk_stays_whole_and_leaves_no_temporary_file(
        small_disk: SmallDisk) -> None:
    from vibe_worktree.core.records import write_json_atomically

    folder = small_disk.path / "claim"
    folder.mkdir()
    record = folder / "record.json"
    write_json_atomically(str(record), {"version": 1, "name": "before"})
    before = record.read_bytes()
    small_disk.fill(leave=0)
    with pytest.raises(OSError) as raised:
        write_json_atomically(str(record), {"version": 1, "name": "after" * 100})
    assert raised.value.errno == errno.ENOSPC
    assert record.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["record.json"]


# -- the defects a full disk found, each proven on every K that fails -------------------------

def failures_until_it_fits(disk: SmallDisk, repo: GitRepo, args: tuple[str, ...],
                           after_each: Callable[[Run], None]) -> Run:
    """Run `args` with 0, 1, 2, ... pages free (no repair in between) until it succeeds;
    `after_each` checks the state every failure left, once the space is back."""
    for pages in range(MOST_PAGES):
        disk.fill(leave=pages * PAGE)
        run = repo.vwt(*args)
        disk.drain()
        if run.returncode == 0:
            assert pages > 0, "the command never met a full disk"
            return run
        assert_disk_full_message(run.stderr, f"{pages} pages free\n{run}")
        after_each(run)
    raise AssertionError(f"{args} still failed with {MOST_PAGES} pages free")


@pytest.mark.slow
def test_a_new_that_ran_out_of_space_leaves_no_branch_and_the_retry_owns_it(
        small_disk: SmallDisk) -> None:
    _sb, repo = setup(small_disk, COMMANDS["new"])

    def nothing_left(run: Run) -> None:
        assert "feat" not in repo.branches(), f"git's branch was left behind\n{run}"
        assert not repo.claim("feat").exists() and not repo.checkout("feat").exists()

    made = failures_until_it_fits(small_disk, repo, ("new", "feat", "--json"), nothing_left)
    assert made.json()["branch_created"] is True


def test_a_move_that_ran_out_of_space_leaves_the_work_in_place_and_nothing_else(
        small_disk: SmallDisk) -> None:
    _sb, repo = setup(small_disk, COMMANDS["new --move"])

    def nothing_left(run: Run) -> None:
        assert files_in(repo.path, WORK), "the work left its checkout"
        assert "moved" not in repo.branches(), (
            f"git's branch was left behind\n{run}\n{repo.git('worktree', 'list', '--porcelain')}"
            f"\n{sorted(p.name for p in (repo.path / '.git' / 'worktrees').glob('*'))}")
        assert not repo.ref_exists("refs/vibe/carried/moved")
        assert not repo.claim("moved").exists() and not repo.checkout("moved").exists()

    failures_until_it_fits(small_disk, repo, ("new", "moved", "--move", "--json"), nothing_left)
    _move_verify(repo)


@pytest.mark.slow
def test_a_merge_that_ran_out_of_space_says_so_and_changes_no_checkout(
        small_disk: SmallDisk) -> None:
    _sb, repo = setup(small_disk, COMMANDS["merge"])
    main = repo.git("rev-parse", "main")

    def unchanged(run: Run) -> None:
        assert "local changes" not in run.stderr, run
        assert repo.git("status", "--porcelain") == "", "the main checkout was left changed"
        if repo.git("rev-parse", "main") != main:  # it landed; only the removal failed
            assert repo.git("show", "main:feat.txt") == "feat committed"

    failures_until_it_fits(small_disk, repo, ("merge", "feat", "--json"), unchanged)
    _merge_verify(repo)


@pytest.mark.slow
def test_a_sync_that_ran_out_of_space_leaves_the_worktree_as_it_was(
        small_disk: SmallDisk) -> None:
    _sb, repo = setup(small_disk, COMMANDS["sync"])
    checkout = repo.checkout("feat")
    head = repo.git("rev-parse", "HEAD", cwd=checkout)

    def unchanged(run: Run) -> None:
        assert repo.git("rev-parse", "HEAD", cwd=checkout) == head
        assert repo.git("status", "--porcelain", cwd=checkout) == "", "files left changed"

    failures_until_it_fits(small_disk, repo, ("sync", "feat", "--json"), unchanged)
    _sync_verify(repo)


def test_an_adopt_that_ran_out_of_space_keeps_the_name_free(small_disk: SmallDisk) -> None:
    _sb, repo = setup(small_disk, COMMANDS["adopt"])

    def nothing_taken(run: Run) -> None:
        assert not repo.claim("feat").exists(), "a claim folder was left, taking the name"
        assert files_in(repo.path / ".claude" / "worktrees" / "feat", WORK)

    adopted = failures_until_it_fits(small_disk, repo, COMMANDS["adopt"].args, nothing_taken)
    assert adopted.json()["adopted"][0]["name"] == "feat"
    _adopt_verify(repo)


def test_room_a_killed_vwt_set_aside_is_dropped_by_the_next_one(tmp_path: Path) -> None:
    from vibe_worktree.core.files import SPARE_PREFIX, SpareRoom

    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"{SPARE_PREFIX}{dead.pid}-0123456789ab"
    stale.write_bytes(bytes(4096))
    live = tmp_path / f"{SPARE_PREFIX}{os.getpid()}-ba9876543210"
    live.write_bytes(b"")
    with SpareRoom(str(tmp_path), 8192) as room:
        assert Path(room.path).stat().st_size == 8192
    assert not stale.exists() and live.exists() and not Path(room.path).exists()
