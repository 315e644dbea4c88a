"""Rewrite the console samples of the README and the docs from real runs.

    python tools/gen_samples.py           # run each sample's commands, rewrite its output
    python tools/gen_samples.py --check   # exit 1 when a sample no longer matches a real run

A sample is a ```console block right after a line `<!-- sample: NAME -->`. Its `$ ` lines are
the commands; they run, in order, in one bash of a fresh sandbox (a home of its own with the
repository `~/src/app`, see `SETUPS`), and everything they print (stdout and stderr, in order)
becomes the lines under each command. Paths under the sandbox's home read `/home/me/...`, and
the bucket's hash is fixed, so a sample is the same from run to run. `--check` compares with
ages (`0s`, `3m`) and runs of spaces normalised, so a sample drifts only when the program's
output does: a new column, a reworded message.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
FILES = ("README.md", "docs/landing.md", "docs/collisions.md", "docs/hooks.md")
DURATION = re.compile(r"(?<!\S)\d+\.\d s\b")  # how long a gate took: varies from run to run
MARKER = re.compile(r"<!-- sample: ([a-z0-9-]+) -->")
SHOWN_HOME = "/home/me"
SHOWN_BUCKET = "app-b9b08b944c7a"
FIXED_DATE = "2026-12-01T12:00:00Z"
SEPARATOR = "\x1e"


def _git(repo: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _app(home: Path, env: dict[str, str]) -> None:
    """`~/src/app`: a small repository on `main`, with a `make test` that passes quietly."""
    repo = home / "src" / "app"
    repo.mkdir(parents=True)
    _git(repo, env, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# app\n")
    (repo / "Makefile").write_text("test:\n\t@true\n")
    _git(repo, env, "add", "-A")
    _git(repo, env, "commit", "-q", "-m", "app")


def _vwt(repo: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(["vwt", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True)
    return done.stdout.strip()


def _edit(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


def _sessions(home: Path, env: dict[str, str]) -> None:
    """`~/src/app` with three sessions at work: login-page edits the line of src/auth.py main
    then changed too and the README title fix-typo also fixes; both touch docs/setup.md, on
    different lines; fix-typo and api-docs both touch docs/api.md, on different lines."""
    _app(home, env)
    repo = home / "src" / "app"
    files = {"src/auth.py": "def login(user):\n    return check(user)\n",
             "docs/setup.md": "# Setup\n\nInstall it.\n\n\n\nRun it.\n",
             "docs/api.md": "# API\n\nlogin(user)\n\n\n\nlogout(user)\n"}
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, env, "add", "-A")
    _git(repo, env, "commit", "-q", "-m", "auth and docs")
    login = Path(_vwt(repo, env, "new", "-p", "login page"))
    fix = Path(_vwt(repo, env, "new", "fix-typo"))
    api = Path(_vwt(repo, env, "new", "api-docs"))
    _edit(login / "src/auth.py", "check(user)", "check_password(user)")
    _edit(login / "README.md", "# app", "# app: now with a login page")
    _edit(login / "docs/setup.md", "Install it.", "Install it, then set LOGIN_SECRET.")
    (login / "src/login.html").write_text("<form></form>\n")
    (login / "src/login.css").write_text("form {}\n")
    _edit(fix / "README.md", "# app", "# App")
    _edit(fix / "docs/setup.md", "Run it.", "Run it:")
    _edit(fix / "docs/api.md", "login(user)", "login(user) -> bool")
    _edit(api / "docs/api.md", "logout(user)", "logout(user) -> None")
    _edit(repo / "src/auth.py", "check(user)", "check(user, strict=True)")
    _git(repo, env, "commit", "-q", "-am", "auth: strict checks")


def _project_hook(home: Path, env: dict[str, str]) -> None:
    """`~/src/app` whose `.vibe/worktree.toml` has a post_create hook `deps`."""
    _app(home, env)
    repo = home / "src" / "app"
    (repo / ".vibe").mkdir()
    (repo / ".vibe" / "worktree.toml").write_text(
        '[[hooks]]\nname = "deps"\ntype = "post_create"\ncommand = "npm ci"\n')
    _git(repo, env, "add", "-A")
    _git(repo, env, "commit", "-q", "-m", "deps hook")


def _finished_sessions(home: Path, env: dict[str, str]) -> None:
    """`~/src/app` in the morning: three sessions committed their work overnight. fix-login's
    passes `make test`; add-search's breaks it; new-theme retitled the README, which main has
    retitled too since."""
    _app(home, env)
    repo = home / "src" / "app"
    (repo / "Makefile").write_text("test:\n\t@test ! -e search.py || "
                                   "{ echo 'FAIL test_search: no index'; false; }\n")
    _git(repo, env, "commit", "-q", "-am", "tests")
    work = {"fix-login": {"login.py": "def login(): ...\n"},
            "add-search": {"search.py": "def search(): ...\n"},
            "new-theme": {"README.md": "# app, in the new theme\n"}}
    for name, files in work.items():
        path = Path(_vwt(repo, env, "new", name))
        for rel, text in files.items():
            (path / rel).write_text(text)
        _git(path, env, "add", "-A")
        _git(path, env, "commit", "-q", "-m", f"{name}: done")
    (repo / "README.md").write_text("# app, version 2\n")
    _git(repo, env, "commit", "-q", "-am", "release 2")


SETUPS: dict[str, Callable[[Path, dict[str, str]], None]] = {
    "land": _finished_sessions,
    "tour": _app,
    "resolve": _app,
    "collisions": _sessions,
    "hooks": _project_hook,
}


def _sandbox_env(tmp: Path, home: Path) -> dict[str, str]:
    gitconfig = tmp / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Me\n\temail = me@example.com\n"
                         "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n")
    tool_bin = str(Path(sys.executable).parent)
    keep = ("PATH", "LANG", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        HOME=str(home), PATH=f"{tool_bin}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",
        GIT_CONFIG_GLOBAL=str(gitconfig), GIT_CONFIG_NOSYSTEM="1", LC_ALL="C.UTF-8",
        GIT_AUTHOR_DATE=FIXED_DATE, GIT_COMMITTER_DATE=FIXED_DATE, SHELL="/bin/sh",
        GIT_CEILING_DIRECTORIES=str(tmp), NO_COLOR="1", COLUMNS="200",
    )
    return env


def run_sample(name: str, commands: list[str]) -> list[list[str]]:
    """The output lines of each command, run in order in one bash of a fresh sandbox."""
    with tempfile.TemporaryDirectory(prefix="vwt-sample-") as folder:
        tmp = Path(folder).resolve()
        home = tmp / "home"
        home.mkdir()
        env = _sandbox_env(tmp, home)
        SETUPS[name](home, env)
        script = "exec 2>&1 </dev/null\n" + "".join(
            f"printf '{SEPARATOR}%s\\n' {i}\n{command}\n" for i, command in enumerate(commands))
        done = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=home,
                              env=env, capture_output=True, text=True, timeout=300)
        text = _shown(done.stdout, home)
    outputs: list[list[str]] = [[] for _ in commands]
    current = None
    for line in text.split("\n"):
        if line.startswith(SEPARATOR):
            current = int(line[1:])
        elif current is not None:
            outputs[current].append(line.rstrip())
    for out in outputs:
        while out and not out[-1]:
            out.pop()
    return outputs


def _shown(text: str, home: Path) -> str:
    """Sandbox paths as `/home/me/...`, the bucket's hash fixed."""
    text = text.replace(str(home), SHOWN_HOME)
    return re.sub(r"\bapp-[0-9a-f]{12}\b", SHOWN_BUCKET, text)


def samples(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, end line) of each sample's body (the lines inside its fence)."""
    lines = text.split("\n")
    found = []
    for i, line in enumerate(lines):
        match = MARKER.fullmatch(line.strip())
        if match and i + 1 < len(lines) and lines[i + 1].startswith("```console"):
            end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
            found.append((match.group(1), i + 2, end))
    return found


def regenerate(text: str) -> str:
    lines = text.split("\n")
    for name, start, end in reversed(samples(text)):
        commands = [line for line in lines[start:end] if line.startswith("$ ")]
        outputs = run_sample(name, [c[2:] for c in commands])
        body = [line for command, out in zip(commands, outputs, strict=True)
                for line in (command, *out)]
        lines[start:end] = body
    return "\n".join(lines)


def normalised(text: str) -> list[str]:
    """What `--check` compares: ages and runs of spaces do not count."""
    result = []
    for line in text.split("\n"):
        line = re.sub(r"(?<!\S)\d+[smhd](?!\S)", "AGE", line)
        line = DURATION.sub("DURATION", line)
        result.append(" ".join(line.split()))
    return result


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for rel in FILES:
        path = PROJECT / rel
        text = path.read_text(encoding="utf-8")
        fresh = regenerate(text)
        if check:
            if normalised(fresh) != normalised(text):
                import difflib

                diff = difflib.unified_diff(text.split("\n"), fresh.split("\n"), rel,
                                            f"{rel} (a real run)", lineterm="", n=1)
                stale.append("\n".join(diff))
        elif fresh != text:
            path.write_text(fresh, encoding="utf-8")
            print(f"rewrote the samples of {rel}")
    if stale:
        print("\n".join(stale))
        print("the samples above no longer match what vwt prints; run: "
              "python tools/gen_samples.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
