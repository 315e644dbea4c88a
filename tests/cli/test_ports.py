"""Port leases across processes (SPEC §17): many at once never share a port."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from vibe_worktree.core.layout import Root
from vibe_worktree.core.leases import Lease, read_table

LEASER = r"""
import json, os, sys
from vibe_worktree.core.layout import Root
from vibe_worktree.core.leases import leasing
root, name = Root.at(sys.argv[1]), sys.argv[2]
with leasing(root, "app-0123456789ab", name, 2) as lease:
    folder = f"{root.claims}/app-0123456789ab/{name}"
    os.makedirs(folder, exist_ok=True)
    with open(f"{folder}/record.json", "w") as out:
        json.dump({"version": 1, "name": name, "ports": list(lease.ports)}, out)
print(json.dumps(list(lease.ports)))
"""


def test_64_processes_leasing_at_once_get_64_disjoint_blocks(tmp_path: Path) -> None:
    root = Root.at(str(tmp_path))
    Path(root.path).mkdir()
    # room for 100 blocks of two: the hash starts of 64 names collide often
    Path(root.config_file).write_text("port_range = [41000, 41199]\n")
    procs = [subprocess.Popen([sys.executable, "-c", LEASER, root.home, f"s{i:02d}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(64)]
    blocks = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        blocks.append(tuple(json.loads(out)))
    assert_disjoint([Lease(b[0], len(b)) for b in blocks])
    assert len(read_table(root)) == 64
    assert {(p, p + 1) for p in read_table(root).values()} == set(blocks)


def assert_disjoint(leases: list[Lease]) -> None:
    seen: set[int] = set()
    for lease in leases:
        assert seen.isdisjoint(lease.ports), f"{lease} overlaps another lease"
        seen.update(lease.ports)
