"""``clusterbench qualify --profile P``: a profile's whole acceptance suite in one command.

Preflight, then every benchmark of the profile's ``suite:`` on this node (or through ``launch``),
all stored as one group (tag ``qualify=<id>``), validated against the profile's criteria, written
as the HTML report and JUnit XML. Exit 0: every check passed; 1: a step or criterion failed;
2: bad input (an unknown profile, a profile without a suite, a step the CLI cannot parse), found
before anything runs.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from clusterbench.cli.argv_check import check_argv
from clusterbench.cli.fleet import OnFail, junit_option, node_name, on_fail_options, take_out
from clusterbench.cli.options import json_option, parse_tags, tag_option, writer_db_option
from clusterbench.errors import ClusterbenchError, UsageError
from clusterbench.judge.blame import node_findings, passing_nodes
from clusterbench.judge.hardware import node_devices, node_problem
from clusterbench.judge.profiles import Profile, SuiteStep, builtin_profiles, load_profile
from clusterbench.judge.text import outcome_lines
from clusterbench.judge.validate import FAIL, PASS, SKIPPED, exit_code, nothing_checked
from clusterbench.judge.validation import judge_group
from clusterbench.launch import drain
from clusterbench.launch.common import split_agent
from clusterbench.printable import printable
from clusterbench.ranks.signals import describe, stopped_by
from clusterbench.records import Run, utc_now
from clusterbench.report import junit as junit_xml
from clusterbench.report import outfile
from clusterbench.report.jsonl import criterion_line, emit
from clusterbench.runner import new_group_id
from clusterbench.store.runs import check_writable, save_run

LAUNCH_ENGINES = ("slurm", "mpi", "torchrun")
GROUP_TAG = "qualify"


@dataclass
class StepResult:
    step: SuiteStep
    argv: list[str]
    exit_code: int
    seconds: float
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class _Stopped(ClusterbenchError):
    """qualify stopped by SIGINT, SIGTERM or SIGHUP: one line, exit 128 + the signal."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.exit_code = 128 + signum


def _root() -> click.Group:
    root = click.get_current_context().find_root().command
    assert isinstance(root, click.Group)
    return root


def _invoke(root: click.Group, argv: list[str]) -> tuple[int, str]:
    """Run a clusterbench command in this process (the ranks it starts share one forkserver, so
    a suite does not pay PyTorch's import per step); its exit code and error line."""
    cmd = root.get_command(click.get_current_context(), argv[0])
    assert cmd is not None, argv[0]   # parsed before (check_argv)
    saved = sys.argv
    sys.argv = ["clusterbench", *argv]  # what the stored run records as its command line
    try:
        rc = cmd.main(args=argv[1:], prog_name=f"clusterbench {argv[0]}", standalone_mode=False)
        return (rc if isinstance(rc, int) else 0), ""
    except click.exceptions.Exit as e:
        return e.exit_code, ""
    except click.exceptions.Abort as e:
        # click makes a Ctrl-C (or SIGTERM) outside a run's own handling "Abort": it stops qualify,
        # it is not a step that failed
        if isinstance(e.__cause__, KeyboardInterrupt):
            raise e.__cause__ from None
        return 1, "aborted"
    except click.ClickException as e:
        return e.exit_code, e.format_message()
    except ClusterbenchError as e:
        return e.exit_code, str(e)
    except Exception as e:  # noqa: BLE001 - a step that breaks is a failed step; the suite goes on
        return 1, f"internal error: {type(e).__name__}: {e}"
    finally:
        sys.argv = saved


def _step_argv(step: SuiteStep, launch: list[str] | None, db: str | None, tags: dict[str, str]) -> list[str]:
    words = list(step.command)
    if db:
        words += ["--db", db]
    for k, v in tags.items():
        words += ["--tag", f"{k}={v}"]
    if launch is None:
        return words
    engine, opts = launch[0], launch[1:]
    if engine in ("slurm", "mpi") and db:
        opts = [*opts, "--db", db]   # where the launcher's ranks store, and where it finds the run
    return ["launch", engine, *opts, "--", *words]


def _preflight_run(tags: dict[str, str], node: str) -> tuple[Run, list[junit_xml.Case], bool, list[str]]:
    """The preflight run, its JUnit cases, whether a check failed, and what ``--on-fail`` takes
    the node out for (a check that could not run fails it, but is no fault of the node's)."""
    from clusterbench.preflight import Expectations, node_problems, record, run_checks
    from clusterbench.preflight.checks import FAIL as CHECK_FAIL

    results = run_checks(Expectations())
    rec = {**record(results), "host": node}
    run = Run("preflight", command=["clusterbench", "preflight"], ended_at=utc_now(),
              hosts=[node], tags=dict(tags), meta={"preflight": rec})
    failed = any(r.status == CHECK_FAIL for r in results)
    return run, list(junit_xml.preflight_suite(results, node).cases), failed, node_problems(results)


def _print_outcomes(profile: Profile, outcomes: Sequence[Any], as_json: bool) -> None:
    if as_json:
        for o in outcomes:
            emit(criterion_line(o, profile.name))
    else:
        for line in outcome_lines(list(outcomes)):
            print(line)


def _check_launch(launch: list[str]) -> None:
    """Refuse a launch that returns before its ranks have stored a run: every step would pass
    having measured nothing, and the group would be judged empty."""
    engine, opts = launch[0], launch[1:]
    if "--print" in opts:
        raise UsageError(f"--launch {shlex.join(launch)!r}: --print runs nothing (qualify judges what its "
                         "steps store; --dry-run prints them)")
    waits = [o for o in opts if o in ("--wait", "--no-wait")]
    if engine == "slurm" and ("--submit" not in opts or waits[-1:] == ["--no-wait"]):
        raise UsageError(f"--launch {shlex.join(launch)!r}: slurm needs --submit, and its --wait (the "
                         "default), so each step's run is stored before the next one starts")


def _report_path(out: Path) -> Path:
    """The page ``report -o OUT`` writes: OUT itself when it ends in .html or .htm, else OUT with
    .html added (``-o nightly`` writes nightly.html), so the summary names the file written."""
    if out.name in ("", ".", ".."):
        raise UsageError(f"-o {str(out)!r}: give the HTML file's name (report.html)")
    if out.suffix.lower() in (".html", ".htm"):
        return out
    return out.with_suffix(out.suffix + ".html") if out.suffix else out.with_suffix(".html")


@click.command("qualify")
@click.option("--profile", "profile_name", required=True, metavar="NAME|FILE",
              help=f"A profile with a suite: ({', '.join(builtin_profiles()) or 'none'}) or a YAML file.")
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False), metavar="FILE",
              help="HTML report to write (default qualify-PROFILE-ID.html); NAME.md and plots go next to it.")
@click.option("--launch", "launch_text", default=None, metavar="'ENGINE OPTIONS'",
              help="Run each step through `clusterbench launch`, e.g. 'slurm --nodes 4 --gpus-per-node 8 "
                   f"--submit' (engines: {', '.join(LAUNCH_ENGINES)}).")
@click.option("--node", default=None, envvar="CLUSTERBENCH_NODE", metavar="NAME",
              help="This node's name in the scheduler (tags the runs; --on-fail acts on it; default: "
                   "the host name; env CLUSTERBENCH_NODE).")
@click.option("--no-preflight", is_flag=True, help="Skip the health checks run (and stored) first.")
@click.option("--dry-run", is_flag=True, help="Print the steps that would run, run nothing.")
@junit_option
@on_fail_options
@json_option("a `step` line per suite step, a `criterion` line per criterion, `drain` lines with "
             "--on-fail, then a `summary`")
@writer_db_option
@tag_option
def qualify(profile_name: str, output: str | None, launch_text: str | None, node: str | None,
            no_preflight: bool, dry_run: bool, junit: str | None, on_fail: OnFail, as_json: bool,
            db: str | None, tags: tuple[str, ...]) -> int:
    """Run a profile's suite on this node (or on every node via --launch), store it as one group,
    validate it, and write the HTML report and JUnit XML. Exit 0 pass, 1 fail, 2 usage."""
    profile = load_profile(profile_name)
    if not profile.suite:
        raise UsageError(f"profile {profile.name} declares no suite: (qualify needs one; validate "
                         "judges stored runs against any profile)")
    launch = split_agent(launch_text, "--launch") if launch_text else None
    if launch is not None and launch[0] not in LAUNCH_ENGINES:
        raise UsageError(f"--launch {launch[0]!r}: expected one of {', '.join(LAUNCH_ENGINES)}")
    node = node or node_name()
    group = new_group_id()
    run_tags = parse_tags(tags)
    own = (GROUP_TAG, "profile") if launch is not None else (GROUP_TAG, "profile", "node")
    taken = [k for k in own if k in run_tags]
    if taken:   # they say which qualification a run belongs to: a user's value would be overwritten
        raise UsageError(f"--tag {taken[0]}=...: qualify sets that tag itself ({', '.join(own)})")
    run_tags.update({GROUP_TAG: group, "profile": profile.name})
    if launch is None:
        run_tags["node"] = node   # every run of a local qualification is this node's
    if on_fail.action:   # a node name it refuses, or --apply without its tool, is found now, not after the suite
        local = [drain.Verdict(node)] if launch is None else []   # under --launch the nodes come from the runs
        drain.plan(on_fail.action, local, False, need_tool=on_fail.apply)
    root = _root()
    planned = [(step, _step_argv(step, launch, db, run_tags)) for step in profile.suite]
    for step, argv in planned:   # a step the CLI cannot parse is a usage error before anything runs
        check_argv(argv, f"suite step {step.name!r}", values=True)
    if dry_run:
        for step, argv in planned:
            if as_json:
                emit({"kind": "step", "name": step.name, "command": list(step.command),
                      "argv": ["clusterbench", *argv], "exit": None})
            else:
                click.echo(f"# {step.name}\n{shlex.join(['clusterbench', *argv])}")
        return 0

    if launch is not None:   # (a dry run prints the steps as they are, for any launch)
        _check_launch(launch)
    elif profile.hardware is not None:   # this node: one a profile is not for says so before its suite
        refused, doubt = node_problem(profile.hardware, *node_devices())
        if refused:
            raise UsageError(f"qualify --profile {profile.name}: {refused}")
        if doubt:
            print(printable(f"# warning: {doubt}"), file=sys.stderr)
    out = _report_path(Path(output) if output else Path(f"qualify-{profile.name}-{group}.html"))
    # a page that cannot be written is a usage error now, not after every step stored
    outfile.target(out, "-o")
    if junit:  # a --junit that cannot be written is a usage error now, not after every step stored
        outfile.target(junit, "--junit")
    # the store opens first: a database this version cannot write fails before any step runs
    check_writable(db)
    started = time.monotonic()

    def say(text: str) -> None:
        print(printable(text), file=sys.stderr, flush=True)

    say(f"# qualify {profile.name} on {node if launch is None else ' '.join(launch)}: "
        f"{len(planned)} step(s), group {GROUP_TAG}={group}")
    pre_cases: list[junit_xml.Case] = []
    pre_problems: list[str] = []
    pre_failed = False
    if not no_preflight and launch is None:
        pre_run, pre_cases, pre_failed, pre_problems = _preflight_run(run_tags, node)
        save_run(db, pre_run, [])
        say(f"# preflight: {pre_run.meta['preflight']['status']}")

    results: list[StepResult] = []
    for i, (step, argv) in enumerate(planned, 1):
        say(f"# step {i}/{len(planned)}: {step.name}: {shlex.join(['clusterbench', *step.command])}")
        t0 = time.monotonic()
        # The steps' own tables go to stderr with --json, so stdout holds only JSON lines.
        with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():
            rc, err = _invoke(root, argv)
        results.append(StepResult(step, argv, rc, time.monotonic() - t0, err))
        signum = stopped_by()
        stopped = signum is not None and rc == 128 + signum   # the step ended because of it
        if rc != 0 and not stopped:
            say(f"# step {step.name!r} failed (exit {rc})" + (f": {err}" if err else ""))
        if as_json:
            emit({"kind": "step", "name": step.name, "command": list(step.command),
                  "argv": ["clusterbench", *argv], "exit": rc, "error": err,
                  "seconds": round(results[-1].seconds, 3)})
        if stopped:
            # The step stored what it measured as an interrupted run and now ignores further
            # signals: going on would run the rest of the suite beyond Ctrl-C, a scheduler's
            # SIGTERM or systemd's stop. Nothing is judged or drained: the node is not at fault.
            assert signum is not None
            raise _Stopped(f"qualify {describe(signum)} in step {i} of {len(planned)} ({step.name!r}); "
                           f"no later step ran, nothing judged; runs so far: {GROUP_TAG}={group}", signum)

    # every criterion, measured or not: one that no step measured is a skipped case, not absent
    judged_group = judge_group(db, profile, {GROUP_TAG: group}, leave_out="preflight")
    loaded, rows, outcomes = judged_group.loaded, judged_group.rows, judged_group.outcomes
    _print_outcomes(profile, outcomes, as_json)

    report_files: list[str] = []
    if loaded and any(ms for _, ms in loaded):
        report_args = [f"{GROUP_TAG}={group}", "--profile", profile_name, "-o", str(out),
                       "--title", f"clusterbench qualify {profile.name} ({node})"]
        if db:
            report_args += ["--db", db]
        with contextlib.redirect_stdout(sys.stderr):
            rc, err = _invoke(root, ["report", *report_args])
        if rc != 0:
            raise ClusterbenchError(f"report: {err or f'exit {rc}'}")
        report_files.append(str(out))

    suites = []
    if pre_cases:
        suites.append(junit_xml.Suite(f"preflight {node}", pre_cases, hostname=node))
    suites.append(junit_xml.Suite(f"qualify {profile.name} steps", [
        junit_xml.Case(r.step.name, f"clusterbench.qualify.{profile.name}",
                       junit_xml.PASS if r.ok else junit_xml.ERROR,
                       "" if r.ok else f"exit {r.exit_code}" + (f": {r.error}" if r.error else ""),
                       shlex.join(["clusterbench", *r.argv]), r.seconds) for r in results],
        properties={GROUP_TAG: group, "node": node}, time=sum(r.seconds for r in results)))
    suites.append(junit_xml.validation_suite(profile.name, outcomes, [r.id for r, _ in loaded]))
    if junit:
        junit_xml.write(junit, suites)

    failed_steps = [r for r in results if not r.ok]
    status = exit_code(outcomes) if outcomes else 1
    if failed_steps or pre_failed:
        status = 1
    if nothing_checked(outcomes) and not failed_steps:
        raise UsageError(f"no criterion of profile {profile.name} matched what its suite measured "
                         f"(group {GROUP_TAG}={group})")
    if launch is None:
        problems = pre_problems + [f"step {r.step.name} exit {r.exit_code}" for r in failed_steps]
        problems += [f"{o.criterion.name} {o.measured:.4g} {o.unit} {o.threshold}" if o.measured is not None
                     else f"{o.criterion.name} {o.threshold}" for o in outcomes if o.status == FAIL]
        take_out(on_fail, {node: problems} if problems else {}, [node], as_json)
    else:
        found = node_findings(outcomes, rows)
        take_out(on_fail, found.problems, passing_nodes(found), as_json, found.notes)

    summary = {"profile": profile.name, "group": group, "node": node,
               "runs": [r.id for r, _ in loaded], "steps": len(results), "failed_steps": len(failed_steps),
               "counts": {s: sum(o.status == s for o in outcomes) for s in (PASS, FAIL, SKIPPED, "error")},
               "report": report_files[0] if report_files else None, "junit": junit,
               "seconds": round(time.monotonic() - started, 1), "status": "pass" if status == 0 else "fail"}
    if as_json:
        emit({"kind": "summary", "command": "qualify", **summary, "exit_code": status})
    else:
        print(f"# qualify {profile.name}: {summary['status'].upper()}: {len(results) - len(failed_steps)}/"
              f"{len(results)} step(s) ran, {summary['counts']['pass']} pass, {summary['counts']['fail']} fail, "
              f"{summary['counts']['skipped']} skipped, {summary['counts']['error']} error; "
              f"runs {GROUP_TAG}={group}" + (f"; report {out}" if report_files else ""))
    return status


commands = [qualify]
