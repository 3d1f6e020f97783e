"""One fleet night imported and reported by two checkouts of clusterbench, side by side.

A change that claims to make ``import`` or ``report`` faster is measured here against the tree
before it: the same night of JSON lines (``fleet_scale.write_night``: 1,000 8-GPU hosts, 418
measurements a run, the 100th night, whose degraded hosts the report finds and explains) imported
into a copy of the same store, then ``report`` over its runs, by each tree in turn, alternating
which goes first each round. Every command is a child process; its wall time and its CPU time
with that of its own children (the import's parsing workers) come from ``wait4``. Beside them the
peer of the import, a bare ``json.loads`` loop over the same file. The medians of each and the
ratio new / base are printed; both trees must store the same number of runs and write the same
report text, or the script exits 1.

    python benchmarks/night_ab.py --base HEAD~3            # a worktree of that commit
    python benchmarks/night_ab.py --base-src /tmp/old/src --rounds 6
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from fleet_scale import JSON_LOOP, write_night  # noqa: E402

NIGHT = 99   # the fleet's 100th night: degraded hosts since night 40


def timed(argv: list[str], src: Path | None, out: Path | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (its own and its children's) of ``argv`` run with ``src`` first on
    the path; exits where it fails."""
    env = dict(os.environ, CLUSTERBENCH_DEBUG="")
    env.pop("CLUSTERBENCH_DB", None)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    t0 = time.perf_counter()
    with (out.open("w") if out else open(os.devnull, "w")) as sink:
        p = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    if rc not in (0, 1):   # report exits 1 where it finds degraded hosts: a verdict, not a failure
        raise SystemExit(f"{' '.join(argv[:4])} ... exited {rc}")
    return wall, usage.ru_utime + usage.ru_stime


def copy_store(store: Path, db: Path) -> None:
    """``store`` as ``db``, with its write-ahead log where it has one, and none of ``db``'s old one:
    a database file beside another's log reads as corrupt."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
        if Path(f"{store}{suffix}").exists():
            shutil.copyfile(f"{store}{suffix}", f"{db}{suffix}")


def runs_in(db: Path) -> int:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0]


def base_tree(ref: str, work: Path) -> Path:
    """A worktree of ``ref`` (removed at the end), its ``src``."""
    path = work / "base"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(path), ref], check=True)
    return path / "src"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--base", help="the git ref to measure against (a worktree of it)")
    group.add_argument("--base-src", type=Path, help="the src directory of the checkout to measure against")
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the src directory measured (default: this one)")
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cbnight-"))
    try:
        base = args.base_src.resolve() if args.base_src else base_tree(args.base, work)
        trees = {"base": base, "new": args.src.resolve()}
        for src in trees.values():   # bytecode first, as an installed copy has it
            compileall.compile_dir(str(src / "clusterbench"), quiet=1)
        before, night = work / "before.jsonl", work / "night.jsonl"
        write_night(before, NIGHT - 1, 1, args.hosts)
        write_night(night, NIGHT, args.hosts + 1, args.hosts)
        store = work / "store.db"
        cb = [sys.executable, "-m", "clusterbench"]
        timed([*cb, "import", str(before), "--db", str(store)], trees["new"])
        selector = f"{args.hosts + 1}-{2 * args.hosts}"
        figures: dict[str, dict[str, list[float]]] = {t: {} for t in (*trees, "json loop")}
        texts: dict[str, str] = {}
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(trees)[::-1]
            for name in order:
                db = work / f"{name}.db"
                copy_store(store, db)
                got = figures[name]
                for what, argv in (("import", [*cb, "import", str(night), "--db", str(db)]),
                                   ("report", [*cb, "report", selector, "--db", str(db),
                                               "-o", str(work / f"{name}.html")])):
                    wall, cpu = timed(argv, trees[name])
                    got.setdefault(f"{what} wall", []).append(wall)
                    got.setdefault(f"{what} cpu", []).append(cpu)
                if runs_in(db) != 2 * args.hosts:
                    raise SystemExit(f"{name}: {runs_in(db)} runs stored, not {2 * args.hosts}")
                texts[name] = (work / f"{name}.md").read_text()
            wall, cpu = timed([sys.executable, "-c", JSON_LOOP, str(night)], None)
            figures["json loop"].setdefault("import wall", []).append(wall)
            figures["json loop"].setdefault("import cpu", []).append(cpu)
            print(f"# round {r + 1}: " + ", ".join(
                f"{n} import {figures[n]['import wall'][-1]:.2f} s" for n in figures), flush=True)
        if texts["base"] != texts["new"]:
            print("the two trees wrote different reports", file=sys.stderr)
            return 1
        print(f"\n{args.hosts} runs a night, {args.rounds} rounds, medians (range)")
        print(f"{'figure':<14} {'base':>20} {'new':>20} {'new / base':>11} {'json loop':>20}")
        for key in ("import wall", "import cpu", "report wall", "report cpu"):
            row = {n: figures[n].get(key) for n in figures}
            med = {n: statistics.median(v) if v else None for n, v in row.items()}
            cells = [f"{med[n]:.2f} ({min(row[n]):.2f}-{max(row[n]):.2f})" if row[n] else "" for n in figures]
            print(f"{key:<14} {cells[0]:>20} {cells[1]:>20} {med['new'] / med['base']:>11.2f} {cells[2]:>20}")
        runs_per_s = {n: args.hosts / statistics.median(figures[n]["import wall"]) for n in trees}
        print(f"import: base {runs_per_s['base']:.0f} runs/s, new {runs_per_s['new']:.0f} runs/s")
        return 0
    finally:
        if args.base and (work / "base").exists():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(work / "base")], check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
