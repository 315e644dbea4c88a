"""B11 and B12 of SPEC.md section 7: many sessions at once, and a home with 5,000 records.

B11 also measures how long the global `.prune` and `.registry` locks are held and waited
for (through `VWT_LOCK_TRACE`), the figures that say whether parallel sessions serialise.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.cases import Config, list_records_vs_version
from benchmarks.fixtures import Repo, make_repo
from benchmarks.measure import Outcome, Sample, alternate
from benchmarks.proc import BenchError, measure
from benchmarks.sandbox import Sandbox

SLOWEST_CALL_S = 10.0


def _call(sb: Sandbox, args: list[str], cwd: Path, env: dict[str, str]) -> float:
    """One vwt process, timed; plain subprocess so that several can run at once."""
    start = time.perf_counter()
    done = subprocess.run([str(sb.tool), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, check=False, timeout=300)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise BenchError(f"vwt {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return seconds


class Cycles:
    """`vwt new NAME` + `vwt rm NAME` cycles spread over a few repositories."""

    def __init__(self, sb: Sandbox, repos: list[Repo], count: int) -> None:
        self.sb, self.repos, self.count = sb, repos, count
        self.slowest = 0.0
        self.peak_mib = 0.0
        self.trace = sb.path("lock-trace")

    def one(self, tag: str, i: int) -> None:
        repo = self.repos[i % len(self.repos)]
        env = {**self.sb.env, "VWT_LOCK_TRACE": str(self.trace)}
        name = f"{tag}-{i:03d}"
        for args in (["new", name, "--no-fetch"], ["rm", name]):
            self.slowest = max(self.slowest, _call(self.sb, args, repo.path, env))

    def measure_peak(self, tag: str) -> None:
        """The larger peak RSS of one `new` and one `rm`, run through the measuring spawner:
        a child the harness forks itself would report the harness's own memory as its peak
        (see benchmarks/spawner.py)."""
        repo = self.repos[0]
        for args in (["new", tag, "--no-fetch"], ["rm", tag]):
            self.peak_mib = max(self.peak_mib,
                                measure([str(self.sb.tool), *args], cwd=repo.path,
                                        env=self.sb.env).peak_mib)

    def run(self, tag: str, workers: int) -> Sample:
        start = time.perf_counter()
        if workers == 1:
            for i in range(self.count):
                self.one(tag, i)
        else:
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(lambda i: self.one(tag, i), range(self.count)))
        return Sample(time.perf_counter() - start, self.peak_mib)


def lock_figures(trace: Path) -> list[str]:
    """p50 / max of the time each global lock was held and waited for, in ms."""
    by_lock: dict[str, tuple[list[float], list[float]]] = {}
    for line in trace.read_text(encoding="utf-8").splitlines() if trace.exists() else []:
        lock, waited, held = line.split()
        waits, holds = by_lock.setdefault(lock, ([], []))
        waits.append(float(waited) * 1000)
        holds.append(float(held) * 1000)
    notes = []
    for lock, (waits, holds) in sorted(by_lock.items()):
        notes.append(f"{lock} taken {len(holds)} times: held p50 {statistics.median(holds):.1f} "
                     f"ms, max {max(holds):.1f} ms; waited p50 {statistics.median(waits):.1f} "
                     f"ms, max {max(waits):.1f} ms")
    return notes


def b11(cfg: Config, out: Outcome) -> list[Outcome]:
    count, rounds = cfg.pick(32, 16), cfg.pick(3, 1)
    out.what = f"{count} new+rm cycles, 4 repos, 8 at a time vs 1"
    with cfg.sandbox("b11") as sb:
        repos = [make_repo(sb, sb.path(f"repo{i}"), 100) for i in range(4)]
        cycles = Cycles(sb, repos, count)
        cycles.run("warm", 8)
        cycles.measure_peak("peak")
        cycles.trace.unlink(missing_ok=True)

        def parallel(i: int) -> Sample:
            return cycles.run(f"par{i}", 8)

        def sequential(i: int) -> Sample:
            return cycles.run(f"seq{i}", 1)

        out.tool, out.base = alternate(rounds, parallel, sequential)
        out.notes.append(f"slowest single call {cycles.slowest:.2f} s (limit {SLOWEST_CALL_S:g} s)")
        out.notes += lock_figures(cycles.trace)
        if cycles.slowest > SLOWEST_CALL_S:
            out.error = f"a single call took {cycles.slowest:.1f} s, over {SLOWEST_CALL_S:g} s"
    return []


RSS_LIMIT_MIB = 60.0


def b12(cfg: Config, out: Outcome) -> list[Outcome]:
    return list_records_vs_version(cfg, out, 5000, cfg.pick(11, 5), RSS_LIMIT_MIB)
