"""B15 of SPEC.md section 7: `vwt env NAME --json` in a home with 1,000 leased worktrees.

The home holds one worktree `vwt new` made and 999 more records, each with its block of ports
in the lease table (`.claims/.ports.json`) and in its record (`ports`), as `vwt new` leaves
them. `vwt env` must find the worktree's lease among them without paying for the others.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.cases import WARMUP, Config, parse_json
from benchmarks.fixtures import claims_dir, make_repo, write_record
from benchmarks.measure import Outcome, Sample, alternate
from benchmarks.proc import BenchError
from benchmarks.sandbox import Sandbox

LEASED = 1000
NAME = "web"


def b15(cfg: Config, out: Outcome) -> list[Outcome]:
    rounds = cfg.pick(30, 15)
    out.what = f"env NAME --json, {LEASED} leased worktrees, vs --version"
    with cfg.sandbox("b15") as sb:
        repo = make_repo(sb, sb.path("repo"), 100)
        sb.vwt(["new", NAME, "--no-fetch"], cwd=repo.path)
        table_file = sb.vibe_home / "worktrees" / ".claims" / ".ports.json"
        table = json.loads(table_file.read_text(encoding="utf-8"))
        taken = set(table.values())
        port = 20000
        for i in range(LEASED - 1):
            name = f"rec-{i:04d}"
            while port in taken:
                port += 1
            _lease_record(write_record(sb.vibe_home, repo, name, i), port)
            table[f"{repo.bucket}/{name}"] = port
            port += 1
        table_file.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
        expected = _expected_port(sb, repo.bucket)

        def tool(i: int) -> Sample:
            result = sb.vwt(["env", NAME, "--json"], cwd=repo.path, sync=True)
            document = parse_json(result)
            if document.get("env", {}).get("VWT_PORT") != str(expected):
                raise BenchError(f"vwt env {NAME} --json gave {result.stdout!r}, expected "
                                 f"VWT_PORT {expected}")
            return Sample(result.seconds, result.peak_mib)

        def version(i: int) -> Sample:
            result = sb.vwt(["--version"], cwd=repo.path, sync=True)
            return Sample(result.seconds, result.peak_mib)

        tool(WARMUP)
        version(WARMUP)
        out.tool, out.base = alternate(rounds, tool, version)
    return []


def _lease_record(record: Path, port: int) -> None:
    data = json.loads(record.read_text(encoding="utf-8"))
    data["ports"] = [port]
    record.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _expected_port(sb: Sandbox, bucket: str) -> int:
    record = claims_dir(sb.vibe_home, bucket) / NAME / "record.json"
    ports = json.loads(record.read_text(encoding="utf-8")).get("ports")
    if not isinstance(ports, list) or not ports:
        raise BenchError(f"vwt new left no ports in {record}")
    return int(ports[0])
