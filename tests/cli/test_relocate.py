"""A pooled setup at its own path (SPEC §15): after a pool entry moved to the worktree's path,
what its hooks wrote that names the entry's folder names the worktree's. Proved with a real
`python -m venv` and an editable-style `.pth`: the venv's scripts run and `import` resolves
inside the moved checkout, also once the old folder is gone, or holds another checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Repo, Sandbox, Vwt
from vibe_worktree.lifecycle.relocate import (
    DEFAULT_PATTERNS,
    patterns_of,
    relocate,
    replace_path,
)

ENTRY_ID = "0123456789abcdef"
VERSION = f"python{sys.version_info.major}.{sys.version_info.minor}"
SITE = f".venv/lib/{VERSION}/site-packages"
# the console script pip writes for an entry point (`demo = demo:main`)
CONSOLE_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from demo import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""
DEMO = "def main():\n    print(__file__)\n"


def base_python() -> str:
    """The interpreter a venv is made from (not this test run's own venv)."""
    return getattr(sys, "_base_executable", sys.executable)


def entry_with_venv(repo: Repo, sandbox: Sandbox) -> Path:
    """A pool entry as a fill leaves it: a detached checkout under a pool folder whose hook
    made a real venv with an editable-style install of the project (the `.pth` pip writes
    for `pip install -e .` of a src layout names the checkout's `src`) and its script."""
    repo.commit("project", {".gitignore": ".venv/\n", "src/demo/__init__.py": DEMO})
    entry = sandbox.tmp / "worktrees" / ".pool" / "bucket" / ENTRY_ID
    entry.parent.mkdir(parents=True)
    repo.git("worktree", "add", "-q", "--detach", str(entry))
    subprocess.run([base_python(), "-m", "venv", "--without-pip", ".venv"], cwd=entry,
                   check=True, env=sandbox.env, timeout=60)
    (entry / SITE / "__editable__.demo-0.1.pth").write_text(f"{entry}/src\n")
    script = entry / ".venv" / "bin" / "demo"
    script.write_text(CONSOLE_SCRIPT.format(python=entry / ".venv" / "bin" / "python"))
    script.chmod(0o755)
    return entry


def take(repo: Repo, entry: Path, sandbox: Sandbox) -> Path:
    """Move the entry to a worktree's path, as the take does (git's admin entry follows)."""
    checkout = sandbox.tmp / "worktrees" / "bucket" / "feature"
    checkout.parent.mkdir(parents=True)
    repo.git("worktree", "move", str(entry), str(checkout))
    return checkout


def run(args: list[str], sandbox: Sandbox, cwd: Path) -> str:
    env = {k: v for k, v in sandbox.env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_moved_venv_runs_and_imports_inside_the_new_worktree(
        repo: Repo, sandbox: Sandbox) -> None:
    entry = entry_with_venv(repo, sandbox)
    python_link = os.readlink(entry / ".venv" / "bin" / "python")
    checkout = take(repo, entry, sandbox)

    done = relocate(str(checkout), str(entry))

    assert {".venv/bin/demo", ".venv/bin/activate", ".venv/pyvenv.cfg",
            f"{SITE}/__editable__.demo-0.1.pth"} <= set(done.rewritten)
    assert done.relinked == () and done.skipped == ()
    assert os.readlink(checkout / ".venv" / "bin" / "python") == python_link
    assert (checkout / SITE / "__editable__.demo-0.1.pth").read_text() == f"{checkout}/src\n"
    # the pool's folder holds another checkout now (an entry made at the same path): the
    # worktree's venv does not import that one's code
    (entry / "src" / "demo").mkdir(parents=True)
    (entry / "src" / "demo" / "__init__.py").write_text("def main():\n    print('decoy')\n")
    expected = str(checkout / "src" / "demo" / "__init__.py")
    assert run([str(checkout / ".venv" / "bin" / "demo")], sandbox, checkout) == expected
    python = str(checkout / ".venv" / "bin" / "python")
    assert run([python, "-c", "import sys, demo; print(sys.prefix, demo.__file__)"], sandbox,
               sandbox.tmp) == f"{checkout / '.venv'} {expected}"
    activate = run(["/bin/sh", "-c", ". .venv/bin/activate && echo \"$VIRTUAL_ENV\""],
                   sandbox, checkout)
    assert activate == str(checkout / ".venv")
    # and once the pool's folder is gone
    subprocess.run(["rm", "-rf", str(entry)], check=True)
    assert run([str(checkout / ".venv" / "bin" / "demo")], sandbox, checkout) == expected
    assert repo.porcelain(checkout) == ""


@pytest.mark.slow
def test_a_venv_with_pip_still_installs_after_the_move(repo: Repo, sandbox: Sandbox) -> None:
    """With the pip `python -m venv` installs (its `bin/pip` is a script naming the venv)."""
    repo.commit("project", {".gitignore": ".venv/\n"})
    entry = sandbox.tmp / "worktrees" / ".pool" / "bucket" / ENTRY_ID
    entry.parent.mkdir(parents=True)
    repo.git("worktree", "add", "-q", "--detach", str(entry))
    subprocess.run([base_python(), "-m", "venv", ".venv"], cwd=entry, check=True,
                   env=sandbox.env, timeout=120)
    checkout = take(repo, entry, sandbox)
    assert ".venv/bin/pip" in relocate(str(checkout), str(entry)).rewritten
    out = run([str(checkout / ".venv" / "bin" / "pip"), "--version"], sandbox, checkout)
    assert f"from {checkout}/.venv/lib/" in out


# -- which occurrences ------------------------------------------------------------------------
@pytest.mark.parametrize(("before", "after"), [
    (b"#!/pool/abc/.venv/bin/python\n", b"#!/w/feat/.venv/bin/python\n"),
    (b"/pool/abc\n", b"/w/feat\n"),
    (b"/pool/abc", b"/w/feat"),
    (b'VIRTUAL_ENV="/pool/abc/.venv"', b'VIRTUAL_ENV="/w/feat/.venv"'),
    (b"PATH=/bin:/pool/abc/bin:/usr/bin", b"PATH=/bin:/w/feat/bin:/usr/bin"),
    (b"file:///pool/abc/src", b"file:///w/feat/src"),
    (b"/pool/abcd/x /pool/abc/x", b"/pool/abcd/x /w/feat/x"),  # a longer name is another path
    (b"/pool/abc.bak /pool/abc-2 /pool/abc_x", b"/pool/abc.bak /pool/abc-2 /pool/abc_x"),
    (b"/mnt/pool/abc /xpool/abc", b"/mnt/pool/abc /xpool/abc"),  # so is a longer parent
    (b"\x00\xff/pool/abc\x00/pool/abc", b"\x00\xff/pool/abc\x00/w/feat"),  # binary-safe
    (b"/pool/abc/pool/abc", b"/w/feat/pool/abc"),
])
def test_only_whole_occurrences_of_the_old_path_are_replaced(before: bytes, after: bytes
                                                               ) -> None:
    assert replace_path(before, b"/pool/abc", b"/w/feat") == after


def pooled_checkout(repo: Repo, sandbox: Sandbox, files: dict[str, bytes]) -> tuple[Path, Path]:
    """An entry with `files` written after the checkout (ignored ones), moved into place."""
    entry = sandbox.tmp / "worktrees" / ".pool" / "bucket" / ENTRY_ID
    entry.parent.mkdir(parents=True, exist_ok=True)
    repo.git("worktree", "add", "-q", "--detach", str(entry))
    for rel, data in files.items():
        path = entry / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.replace(b"ENTRY", os.fsencode(entry)))
    return take(repo, entry, sandbox), entry


def test_a_prefix_of_another_path_is_told_apart_from_it(repo: Repo, sandbox: Sandbox) -> None:
    repo.commit("ignore", {".gitignore": ".venv/\n"})
    checkout, entry = pooled_checkout(repo, sandbox, {
        ".venv/pyvenv.cfg": b"command = x -m venv ENTRY/.venv\nother = ENTRYd/.venv\n"})
    relocate(str(checkout), str(entry))
    assert (checkout / ".venv/pyvenv.cfg").read_text() == (
        f"command = x -m venv {checkout}/.venv\nother = {entry}d/.venv\n")


def test_tracked_files_are_never_rewritten(repo: Repo, sandbox: Sandbox) -> None:
    entry = sandbox.tmp / "worktrees" / ".pool" / "bucket" / ENTRY_ID
    repo.commit("tracked", {"tools/paths.txt": f"{entry}/bin\n", ".gitignore": "tools/*.local\n"})
    checkout, _ = pooled_checkout(repo, sandbox, {"tools/made.local": b"ENTRY/bin\n"})
    done = relocate(str(checkout), str(entry), ["tools/*"])
    assert done.rewritten == ("tools/made.local",) and done.skipped == ("tools/paths.txt",)
    assert (checkout / "tools/paths.txt").read_text() == f"{entry}/bin\n"
    assert repo.porcelain(checkout) == ""


def test_nothing_outside_the_patterns_is_touched(repo: Repo, sandbox: Sandbox) -> None:
    repo.commit("ignore", {".gitignore": ".venv/\nbuild/\n"})
    checkout, entry = pooled_checkout(repo, sandbox, {
        f"{SITE}/demo/__init__.py": b"HERE = 'ENTRY'\n", "build/paths.txt": b"ENTRY\n",
        ".venv/bin/tool": b"#!ENTRY/.venv/bin/python\n"})
    done = relocate(str(checkout), str(entry))
    assert done.rewritten == (".venv/bin/tool",)
    assert (checkout / SITE / "demo/__init__.py").read_text() == f"HERE = '{entry}'\n"
    assert (checkout / "build/paths.txt").read_text() == f"{entry}\n"
    assert relocate(str(checkout), str(entry), ["build/"]).rewritten == ("build/paths.txt",)


def test_no_symlink_is_followed_and_a_link_naming_the_old_path_is_retargeted(
        repo: Repo, sandbox: Sandbox) -> None:
    repo.commit("ignore", {".gitignore": ".venv/\n"})
    outside = sandbox.tmp / "outside-files"
    outside.mkdir()
    (outside / "shared.pth").write_text(f"{sandbox.tmp}/worktrees/.pool/bucket/{ENTRY_ID}\n")
    (outside / "site").mkdir()
    (outside / "site" / "x.pth").write_text(f"{sandbox.tmp}/worktrees/.pool/bucket/{ENTRY_ID}\n")
    before = {p: p.read_bytes() for p in outside.rglob("*.pth")}
    checkout, entry = pooled_checkout(repo, sandbox, {".venv/bin/real": b"#!ENTRY/python\n"})
    bin_dir = checkout / ".venv" / "bin"
    (bin_dir / "to-outside").symlink_to(outside / "shared.pth")
    (bin_dir / "to-old").symlink_to(f"{entry}/.venv/bin/real")
    (bin_dir / "relative").symlink_to("real")
    (checkout / ".venv/lib").mkdir()
    (checkout / f".venv/lib/{VERSION}").mkdir()
    (checkout / SITE).symlink_to(outside / "site")  # a symlinked folder is never entered

    done = relocate(str(checkout), str(entry))

    assert done.rewritten == (".venv/bin/real",) and done.relinked == (".venv/bin/to-old",)
    assert {p: p.read_bytes() for p in outside.rglob("*.pth")} == before
    assert os.readlink(bin_dir / "to-old") == f"{checkout}/.venv/bin/real"
    assert os.readlink(bin_dir / "relative") == "real"
    assert os.readlink(bin_dir / "to-outside") == str(outside / "shared.pth")


def test_modes_are_kept_and_a_hard_link_is_not_written_through(
        repo: Repo, sandbox: Sandbox) -> None:
    repo.commit("ignore", {".gitignore": ".venv/\n"})
    checkout, entry = pooled_checkout(repo, sandbox, {".venv/bin/tool": b"#!ENTRY/python\n"})
    tool = checkout / ".venv/bin/tool"
    tool.chmod(0o751)
    cache = sandbox.tmp / "cache-copy"
    os.link(tool, cache)  # a package manager's cache holding the same file
    relocate(str(checkout), str(entry))
    assert tool.read_text() == f"#!{checkout}/python\n"
    assert (tool.stat().st_mode & 0o7777) == 0o751
    assert cache.read_text() == f"#!{entry}/python\n"
    assert not [p for p in tool.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_compiled_program_is_left_alone(repo: Repo, sandbox: Sandbox) -> None:
    repo.commit("ignore", {".gitignore": ".venv/\n"})
    checkout, entry = pooled_checkout(repo, sandbox, {
        ".venv/bin/native": b"\x7fELF\x02\x01\x01\x00ENTRY/lib\x00"})
    done = relocate(str(checkout), str(entry))
    assert done.skipped == (".venv/bin/native",) and done.rewritten == ()
    assert os.fsencode(entry) in (checkout / ".venv/bin/native").read_bytes()


def test_patterns_come_from_the_hooks_that_ran_in_the_pool() -> None:
    hooks = [{"status": "ok", "relocate": ["build/*.cfg"]},
             {"status": "ok"},  # a marker an older vwt wrote: the default
             {"status": "skipped_unapproved", "relocate": ["never/*"]},
             {"status": "ok", "relocate": []}]
    assert patterns_of(hooks) == ("build/*.cfg", *DEFAULT_PATTERNS)
    assert patterns_of([]) == ()


# -- through vwt: pool fill, then new -----------------------------------------------------------
MAKE_VENV = """set -e
{python} -m venv --without-pip .venv
site=$(echo .venv/lib/python*/site-packages)
echo "$(pwd -P)/src" > "$site/__editable__.demo-0.1.pth"
printf '#!%s\\nfrom demo import main\\nmain()\\n' "$(pwd -P)/.venv/bin/python" > .venv/bin/demo
chmod +x .venv/bin/demo
"""


def test_a_venv_made_in_the_pool_runs_and_imports_inside_the_worktree_new_takes(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    repo.commit("project", {
        ".gitignore": ".venv/\n", "src/demo/__init__.py": DEMO, "requirements.txt": "\n",
        "tools/mkvenv.sh": MAKE_VENV.format(python=base_python()),
        ".vibe/worktree.toml": '[[hooks]]\nname = "venv"\ntype = "post_create"\n'
                               'command = "sh tools/mkvenv.sh"\n'
                               'inputs = ["requirements.txt"]\n'})
    vwt.ok("hooks", "approve", "--all")
    settings = sandbox.vibe_home / "worktree.toml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text("[pool]\nsize = 1\n")
    vwt.ok("pool", "fill")
    [entry] = [p for p in (vwt.layout.root / ".pool" / repo.bucket).iterdir()
               if p.is_dir() and not p.name.startswith(".")]
    settings.write_text("[pool]\nsize = 0\n")  # no refill at the same path meanwhile
    repo.commit("ahead", {"src/other.py": "\n"})  # a start point ahead of the entry's base

    created = vwt.new("feature", "--no-fetch")

    assert created["pooled"] is True
    assert created["hooks"] == [{"name": "venv", "type": "post_create", "source": "project",
                                 "status": "pooled", "exit_code": 0}]
    checkout = Path(created["path"])
    expected = str(checkout / "src" / "demo" / "__init__.py")
    assert not entry.exists()  # the pool's folder is gone
    assert run([str(checkout / ".venv" / "bin" / "demo")], sandbox, checkout) == expected
    # and once another checkout holds the pool's old folder
    repo.git("worktree", "add", "-q", "--detach", str(entry))
    (entry / "src" / "demo" / "__init__.py").write_text("def main():\n    print('decoy')\n")
    assert run([str(checkout / ".venv" / "bin" / "demo")], sandbox, checkout) == expected
    python = str(checkout / ".venv" / "bin" / "python")
    assert run([python, "-c", "import sys, demo; print(sys.prefix, demo.__file__)"], sandbox,
               sandbox.tmp) == f"{checkout / '.venv'} {expected}"
    assert repo.porcelain(checkout) == ""
