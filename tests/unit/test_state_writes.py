"""Every state file vwt writes goes through one writer, `core.files.write_atomically`
(temporary file, written in full, fsync, rename, folder fsync; the temporary file removed on
failure): a full disk or a crash never leaves one empty or half written."""

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "vibe_worktree"
# the writer itself, and the index copy git writes and that replaces a checkout's index
ALLOWED = {"core/files.py", "core/index_files.py"}
REPLACING = re.compile(r"os\.replace\(|open\([^)]*[\"'](w|wb|w\+|a)[\"']")


def test_no_module_replaces_or_writes_a_file_but_through_the_one_writer():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ALLOWED:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if REPLACING.search(line) and "tarfile.open" not in line:
                found.append(f"{rel}:{number}: {line.strip()}")
    assert not found, "write state files with core.files.write_atomically:\n" + "\n".join(found)
