"""`Worktrees.merge` / `Worktrees.sync` and the landing fields of the Python API: typed results,
run in a process of their own with the sandbox's environment."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json, sys
    from vibe_worktree import MergeResult, SyncResult, Worktrees
    wt = Worktrees(cwd=sys.argv[1])
    row = next(r for r in wt.list() if r.name == "feat")
    synced = wt.sync("feat", fetch=False)
    merged = wt.merge("feat", mode="rebase", fetch=False, hooks=False)
    assert isinstance(synced, SyncResult) and isinstance(merged, MergeResult)
    print(json.dumps({"row": [row.target, row.behind, row.integrated, row.safe_to_remove],
                      "sync": [synced.outcome, synced.exit_code, synced.to_json()],
                      "merge": [merged.outcome, merged.exit_code, merged.to_json()]}))
""")


def test_api_merge_and_sync_return_typed_results(repo, vwt, sandbox):
    path = vwt.new("feat")["path"]
    repo.commit("work", {"work.txt": "work\n"}, cwd=path)
    repo.commit("main moves", {"m.txt": "m\n"})
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(repo.path)], env=sandbox.env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["row"] == ["main", 1, None, False]
    assert data["sync"][:2] == ["synced", 0] and data["sync"][2]["onto"] == "main"
    assert data["merge"][:2] == ["merged", 0]
    assert data["merge"][2]["commit"] == repo.rev("main")
    assert data["merge"][2]["hooks"] == []
    assert repo.git("show", "main:work.txt") == "work"


RESOLVE = textwrap.dedent("""
    import json, sys
    from vibe_worktree import SyncResult, Worktrees
    wt = Worktrees(cwd=sys.argv[1])
    stopped = wt.sync("feat", fetch=False, stop_on_conflict=True)
    with open(sys.argv[2], "w") as handle:
        handle.write("resolved\\n")
    import subprocess
    subprocess.run(["git", "-C", sys.argv[3], "add", "README.md"], check=True)
    synced = wt.sync_continue("feat")
    assert isinstance(stopped, SyncResult) and isinstance(synced, SyncResult)
    print(json.dumps([[stopped.outcome, stopped.exit_code, list(stopped.conflicts)],
                      [synced.outcome, synced.exit_code]]))
""")


def test_api_resolves_a_sync_conflict_with_stop_and_continue(repo, vwt, sandbox):
    path = vwt.new("feat")["path"]
    repo.commit("feat", {"README.md": "feat\n"}, cwd=path)
    repo.commit("main", {"README.md": "main\n"})
    proc = subprocess.run([sys.executable, "-c", RESOLVE, str(repo.path), f"{path}/README.md",
                           path], env=sandbox.env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [["conflict_stopped", 1, ["README.md"]], ["synced", 0]]
    assert repo.rev("feat~1") == repo.rev("main")
