"""A fuzz harness for every click command of ``clusterbench``: each option and argument, one at a
time, gets hostile values on top of a minimal valid invocation; each call runs in a forked child
(so a hang can be killed and a rank's stderr is caught) with a fresh copy of a small database of
real logs. A finding is a traceback, an "internal error", more than one error line, an exit code
outside {0, 1, 2, 74}, exit 0 for a value no command can accept, a hang, or a run stored by a
command that failed with a usage error.

``python tests/helpers/cli_fuzz.py [--seed N] [--sample K] [--only CMD] [--jobs J]`` runs it and prints
the findings; tests/system/test_cli_fuzz.py runs a seeded subset.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import select
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import click

from clusterbench.families import FAMILIES

DATA = Path(__file__).resolve().parent.parent / "data"
NCCL = DATA / "nccl-tests"
LOGS = [(NCCL / "superbench-nccl_allreduce.log", "env=a"), (NCCL / "seed-mi300x-rccl-all_reduce-8gpu.txt", "env=b"),
        (DATA / "transferbench" / "docs-presets-p2p-mi350x-v1.67.txt", "env=c")]
OK_CODES = {0, 1, 2, 74}

# Minimal valid invocations (after the command's path); {db} and {tmp} are filled per call.
# Commands that measure use the smallest sizes on the CPU with one or two ranks.
DB = ["--db", "{db}"]
CPU1 = ["--np", "1", "--device", "cpu", "--timeout", "60"] + DB
BASE: dict[str, list[str]] = {
    "baseline create": ["1", "-o", "{tmp}/base.yaml"] + DB,
    "coll": ["all_reduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0"] + CPU1,
    "compare": ["env=a", "env=b"] + DB,
    # the fuzz's database holds collective runs and no compute: refused past its options' checks
    "predict": ["1", "--np", "2"] + DB,
    "ddp-comm": ["--layers", "1", "--size", "1K", "--steps", "1", "--warmup", "0"] + CPU1,
    "env diff": ["1", "2"] + DB,
    "env show": ["1"] + DB,
    "export openmetrics": DB,
    "gemm": ["-m", "8", "-n", "8", "-k", "8", "-i", "1", "--cold-iters", "1", "--samples", "1", "--device", "cpu",
             "--timeout", "60"] + DB,
    "import": [str(LOGS[0][0])] + DB,
    "infer-tp": ["--hidden", "8", "--layers", "1", "--batch-sizes", "1", "--iters", "1", "--warmup", "0"] + CPU1,
    "launch dstack": ["--print", "--", "coll", "all_reduce"],
    "launch k8s": ["--print", "--", "coll", "all_reduce"],
    "launch mpi": ["--hosts", "a,b", "--print", "--", "coll", "all_reduce"],
    "launch slurm": ["--print", "--", "coll", "all_reduce"],
    "launch torchrun": ["--rdzv-endpoint", "127.0.0.1:29500", "--print", "--", "coll", "all_reduce"],
    "net": ["--np", "2", "--device", "cpu", "-t", "0.1", "--latency-iters", "2", "--timeout", "60"] + DB,
    "preflight": ["--root", str(DATA / "sysfs" / "h100-node")],
    "qualify": ["--profile", "cpu-smoke", "--dry-run"] + DB,
    "report": ["1", "-o", "{tmp}/r.html"] + DB,
    "results copy": ["--from", "{db}", "--to", "{tmp}/copy.db"],
    "results delete": ["3"] + DB,
    "results export": ["1"] + DB,
    "results list": DB,
    "results show": ["1"] + DB,
    "results tag": ["1", "x=y"] + DB,
    "run": ["--no-preflight"] + CPU1,
    "scaling": ["env=a", "env=b", "--benchmark", "nccl-tests", "--metric", "busbw"] + DB,
    "serve-metrics": ["--port", "1", "--addr", "127.0.0.1"] + DB,
    "stream": ["-s", "1K", "-n", "2", "--device", "cpu", "--timeout", "60"] + DB,
    "sweep": ["--hosts", "a,b", "--timeout", "5", "--join-timeout", "5"] + DB,
    "theory": ["--link", "100Gbps", "--nodes", "2,4"],
    "train": ["--layers", "1", "--hidden", "16", "--heads", "2", "--seq", "8", "--vocab", "32", "--batch", "1",
              "--steps", "1", "--warmup", "0"] + CPU1,
    "transfer": ["--matrix", "h2h", "--bytes", "1K", "--iterations", "1", "--warmups", "0", "--device", "cpu",
                 "--timeout", "60"] + DB,
    "trend": DB,
    "validate": ["1", "--profile", "amd-mi300x-oem"] + DB,
}
# Commands whose valid invocation does not end by itself (a server) or reaches for other hosts.
NO_END = {"serve-metrics", "sweep"}
# Commands that run a benchmark (seconds each, torch imported): every family's command and the
# suite; fewer values; a timeout there is a slow run, not a hang, unless the value is one that
# should be refused.
MEASURING = {command for family in FAMILIES for command in family.commands} - NO_END | {"run"}

# Hostile values: (value, whether no command may accept it)
TEXT = [("", False), (" ", False), ("\x00", True), ("a\x00b", True), ("é☃\u202e", False), ("\n", False),
        ("x\ny", False), ("-1", False), ("0", False), ("nan", False), ("inf", False), ("1e309", False),
        ("9" * 30, False), ("9" * 5000, False), ("%s{0}", False), ("\udcff", False)]
INT = [("-1", False), ("0", False), ("1.5", True), ("99999999999999999999999", False), ("nan", True),
       ("", True), ("\x00", True), ("0x10", False), ("-99999999999999999999999", False)]
FLOAT = [("nan", False), ("inf", False), ("-inf", False), ("-1", False), ("0", False), ("1e309", False),
         ("1e-320", False), ("", True), ("\x00", True), ("1,5", True)]
SIZE = [("1Q", True), ("-1K", False), ("1e300", False), ("nanK", True), ("1.5.5M", True),
        ("99999999999999999999999999G", False), ("0", False), ("infG", True)]
CHOICE = [("", True), ("bogus", True), ("\x00", True)]
# Files made in {tmp} by make_files(); "-" is standard input or output.
PATHS = [("{tmp}/adir", False), ("{tmp}/missing/x", False), ("{tmp}/fifo", False), ("{tmp}/empty", False),
         ("{tmp}/garbage.bin", False), ("{tmp}/bad.yaml", False), ("{tmp}/nul.txt", False), ("-", False),
         ("/dev/full", False), ("/dev/null", False)]
SELECTORS = [("99999999999999999999", True), ("-1", False), ("0", False), ("1..", False), ("..", False),
             ("last~99999999999999999999", True), ("=x", False), ("tag=", False), ("1..99999999999999999999", False),
             ("last~-1", False), ("²", True), ("0" * 5000 + "1", False), ("k=\udcff", True), ("bench:\udcff", True)]


def make_files(tmp: Path) -> None:
    (tmp / "adir").mkdir(exist_ok=True)
    if not (tmp / "fifo").exists():
        os.mkfifo(tmp / "fifo")
    (tmp / "empty").write_bytes(b"")
    (tmp / "garbage.bin").write_bytes(bytes(range(256)) * 8)
    (tmp / "bad.yaml").write_text("a: [1, 2\nb: {: :\n  - &x *x\n\t\ttab\n")
    (tmp / "nul.txt").write_bytes(b"criteria:\x00\n  - name: x\x00\n")


def build_db(path: Path) -> None:
    from judge_helpers import run_cli

    for log, tag in LOGS:
        rc, _, err = run_cli("import", log, "--db", path, "--tag", tag)
        assert rc == 0, err


def leaves(group: click.Group | None = None, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    """Every command that runs (not a group), by its space-joined path."""
    if group is None:
        from clusterbench.cli import cli

        group = cli
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            yield from leaves(cmd, (*path, name))
        elif cmd is not None:
            yield " ".join((*path, name)), cmd


def _split(cmd: click.Command, argv: list[str]) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """A base argv as (options, {argument name: values}, after ``--``): positionals are parsed by
    click's own parser, so a hostile value can take one argument's place."""
    if "--" in argv:
        i = argv.index("--")
        argv, tail = argv[:i], argv[i + 1:]
    else:
        tail = []
    opts: list[str] = []
    pos: list[str] = []
    takes = {o: p for p in cmd.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)}
    it = iter(argv)
    for a in it:
        if a in takes:
            opts.append(a)
            if not takes[a].is_flag and not takes[a].count:
                opts.append(next(it))
        else:
            pos.append(a)
    args: dict[str, list[str]] = {}
    arguments = [p for p in cmd.params if isinstance(p, click.Argument)]
    for p in arguments:
        if p.nargs == -1:
            n = len(pos) - sum(max(q.nargs, 0) for q in arguments if q is not p and q.name not in args)
            args[p.name], pos = pos[:n], pos[n:]  # type: ignore[index]
        else:
            args[p.name], pos = pos[:p.nargs], pos[p.nargs:]  # type: ignore[index]
    if tail:
        last = arguments[-1].name if arguments else None
        if last is not None:
            args[last] = args.get(last, []) + tail  # type: ignore[index]
    return opts, args, tail


def _join(cmd: click.Command, opts: list[str], args: dict[str, list[str]]) -> list[str]:
    pos = [v for p in cmd.params if isinstance(p, click.Argument) for v in args.get(p.name or "", [])]
    return opts + (["--", *pos] if pos else [])


def _values(p: click.Parameter, measuring: bool) -> list[tuple[str, bool]]:
    t = p.type
    name = (p.name or "").lower()
    if isinstance(t, click.Choice):
        vals = CHOICE + [(str(t.choices[0]).upper() + "X", True)]
    elif isinstance(t, (click.IntRange,)) or t is click.INT or getattr(t, "name", "") == "integer":
        vals = list(INT)
    elif isinstance(t, click.FloatRange) or getattr(t, "name", "") == "float":
        vals = list(FLOAT)
    elif isinstance(t, (click.File, click.Path)) or "db" in name or "file" in name or name in (
            "profile", "config", "topology", "root", "sys_root", "script", "output", "paths", "kernel_log"):
        vals = PATHS + TEXT[:6]
    else:
        vals = list(TEXT)
        if any(w in name for w in ("bytes", "size", "speed", "link", "rate", "arraysize", "sizes", "since",
                                   "time", "shm", "bucket")) or name in ("m", "n", "k", "batch"):
            vals += SIZE
        if name in ("runs", "selectors", "selector", "run_a", "run_b", "run", "baseline"):
            vals += SELECTORS
    if measuring:  # each accepted value runs a benchmark: the values most likely to break it
        keep = {"", "\x00", "-1", "0", "nan", "inf", "1e309", "99999999999999999999999", "bogus", "1Q", "-1K",
                "99999999999999999999999999G", "{tmp}/adir", "{tmp}/fifo", "{tmp}/garbage.bin", "é☃\u202e"}
        vals = [v for v in vals if v[0] in keep]
    return vals


@dataclasses.dataclass
class Case:
    command: str
    param: str
    value: str
    argv: list[str]
    must_fail: bool


def cases(only: set[str] | None = None) -> Iterator[Case]:
    for path, cmd in leaves():
        if only and path not in only:
            continue
        base = BASE.get(path)
        if base is None:
            yield Case(path, "<no base>", "", path.split(), False)
            continue
        opts0, args0, _ = _split(cmd, base)
        for p in cmd.params:
            if isinstance(p, click.Option) and (p.is_flag or p.count or p.name == "help"):
                continue
            for value, must_fail in _values(p, path in MEASURING):
                opts, args = list(opts0), {k: list(v) for k, v in args0.items()}
                if isinstance(p, click.Option):
                    flag = p.opts[0]
                    for o in p.opts:  # replace the value the base gives it, or add one
                        if o in opts:
                            i = opts.index(o)
                            del opts[i:i + 2]
                    opts += [flag, value]
                    label = flag
                else:
                    if p.name in ("command",):  # a wrapped command: hostile words inside it are its own
                        continue
                    args[p.name] = [value]  # type: ignore[index]
                    label = f"<{p.name}>"
                yield Case(path, label, value, [*path.split(), *_join(cmd, opts, args)], must_fail)


@dataclasses.dataclass
class Result:
    case: Case
    rc: int | None
    out: str
    err: str
    seconds: float
    runs_before: int
    runs_after: int


def _runs(db: Path) -> int:
    if not db.exists() or db.stat().st_size == 0:
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
            return c.execute("SELECT count(*) FROM runs").fetchone()[0]
    except sqlite3.Error:
        return -1


def run_case(case: Case, template: Path, work: Path, timeout: float) -> Result:
    """One call in a forked child, in its own session (killed whole at the timeout)."""
    tmp = Path(tempfile.mkdtemp(dir=work))
    make_files(tmp)
    db = tmp / "cb.db"
    shutil.copy(template, db)
    argv = [a.replace("{db}", str(db)).replace("{tmp}", str(tmp)) for a in case.argv]
    before = _runs(db)
    out_f, err_f = tmp / "stdout", tmp / "stderr"
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 99
        try:  # (what fails before main() is written to the stderr file, exit 99)
            os.setsid()
            os.chdir(tmp)
            fd_in = os.open(os.devnull, os.O_RDONLY)
            os.dup2(fd_in, 0)
            fd_out = os.open(out_f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            fd_err = os.open(err_f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd_out, 1)
            os.dup2(fd_err, 2)
            # as a real process has them (under pytest sys.stdout and sys.stderr are its captures)
            sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False)
            sys.stderr = sys.__stderr__ = open(2, "w", encoding="utf-8", errors="backslashreplace",
                                               closefd=False, buffering=1)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            from clusterbench.cli import main

            try:
                main(argv)
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:  # noqa: BLE001 - an uncaught exception is what we look for
                sys.stderr.write("UNCAUGHT " + traceback.format_exc())
                code = 98
        except BaseException:  # noqa: BLE001 - the harness itself failed
            with open(err_f, "a") as f:
                f.write("HARNESS " + traceback.format_exc())
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:  # noqa: BLE001
                pass
            os._exit(code if 0 <= code < 256 else 97)
    rc: int | None = None
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            rc = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() - start > timeout:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            break
        select.select([], [], [], 0.02)
    seconds = time.monotonic() - start
    out = out_f.read_text(errors="replace")
    err = err_f.read_text(errors="replace")
    after = _runs(db)
    try:  # the rank processes of a killed run
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    shutil.rmtree(tmp, ignore_errors=True)
    return Result(case, rc, out, err, seconds, before, after)


def findings(r: Result, hang_after: float) -> list[str]:
    """What is wrong with one result ([] when nothing is)."""
    c = r.case
    bad = []
    if r.rc is None:
        if c.command not in NO_END and not (c.command in MEASURING and r.seconds < hang_after):
            bad.append(f"hang: no exit in {r.seconds:.0f} s")
        return bad
    if "Traceback" in r.err or "UNCAUGHT" in r.err:
        bad.append("traceback")
    if "internal error" in r.err:
        bad.append("internal error")
    if r.rc not in OK_CODES:
        bad.append(f"exit {r.rc}")
    if r.rc != 0:  # exit 1 may be a verdict (a failed check, a failed run) with no error line
        errors = [ln for ln in r.err.splitlines() if ln.startswith("clusterbench: error:")]
        if len(errors) > 1 or (not errors and r.rc != 1):
            bad.append(f"{len(errors)} error lines")
        else:  # the error line is the last; anything after it is a message broken over lines
            tail = r.err.rstrip("\n").split("clusterbench: error:")[-1]
            if "\n" in tail:
                bad.append("multi-line error")
    if r.rc == 0 and c.must_fail:
        bad.append("exit 0 for an invalid value")
    if r.rc == 2 and r.runs_after > r.runs_before:
        bad.append(f"usage error but {r.runs_after - r.runs_before} run(s) stored")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sample", type=int, default=0, help="this many cases at random (0: all)")
    ap.add_argument("--only", action="append", help="a command's path, e.g. 'results show'")
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--skip-measuring", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    all_cases = list(cases(set(args.only) if args.only else None))
    if args.skip_measuring:
        all_cases = [c for c in all_cases if c.command not in MEASURING]
    if args.sample:
        all_cases = random.Random(args.seed).sample(all_cases, min(args.sample, len(all_cases)))
    with tempfile.TemporaryDirectory() as work:
        template = Path(work) / "template.db"
        build_db(template)
        n_bad = 0
        for i, case in enumerate(all_cases):
            timeout = 5 if case.command in NO_END else (60 if case.command in MEASURING else args.timeout)
            r = run_case(case, template, Path(work), timeout)
            bad = findings(r, args.timeout)
            if bad:
                n_bad += 1
                print(f"[{i}/{len(all_cases)}] {case.command} {case.param}={case.value[:40]!r}: {', '.join(bad)} "
                      f"(rc={r.rc}, {r.seconds:.1f}s)\n    argv={case.argv}\n    stderr={r.err[-600:]!r}",
                      flush=True)
        print(f"{len(all_cases)} cases, {n_bad} with findings")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
