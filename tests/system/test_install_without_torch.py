"""The analysis-only install: clusterbench without PyTorch imports, stores, judges and reports;
a benchmark command says in one line that it needs torch and how to get it.

Two ways to take torch away, both real processes running the real CLI:
- an import hook that makes ``import torch`` fail (fast, every analysis command);
- a fresh virtual environment without the system site-packages, into which the package is
  installed by pip (``--no-deps``) next to its non-torch dependencies linked from this machine,
  so nothing of torch is on its path at all.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from paths import ROOT

from clusterbench.envinfo.torchcheck import TORCH_MISSING

DATA = ROOT / "tests" / "data"
NCCL_LOG = DATA / "nccl-tests" / "seed-mi300x-rccl-all_reduce-8gpu.txt"
STREAM_LOG = DATA / "babelstream" / "seed-mi300x-hip-8gpu-mpi.txt"

BLOCK_TORCH = r"""
import runpy, sys

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTorch())
sys.argv = ["clusterbench"] + sys.argv[1:]
runpy.run_module("clusterbench", run_name="__main__")
"""


def test_torch_is_an_extra_not_a_dependency():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in meta["dependencies"] if d.lower().startswith("torch")]
    extras = meta["optional-dependencies"]
    assert extras["torch"] == ["torch>=2.4"]
    assert extras["nvidia"] == ["nvidia-ml-py"] and extras["amd"] == ["amdsmi"]
    assert "matplotlib>=3.7" in meta["dependencies"]  # reports stay in the analysis install


Runner = Callable[[list[str]], subprocess.CompletedProcess]


def _runner(exe: list[str], cwd: Path, env: dict[str, str]) -> Runner:
    env = {k: v for k, v in env.items() if not k.startswith("CLUSTERBENCH_")}
    env["CLUSTERBENCH_DB"] = str(cwd / "results.db")
    return lambda args: subprocess.run(exe + args, cwd=cwd, env=env, capture_output=True, text=True,
                                       timeout=300)


def _analysis_session(tmp_path: Path, _run: Runner) -> None:
    """What an analyst does without torch; every step must succeed, the benchmark must refuse."""
    def ok(*args: str) -> str:
        r = _run(list(args))
        assert r.returncode == 0, (args, r.stdout[-2000:], r.stderr[-2000:])
        assert "torch" not in r.stderr.lower(), r.stderr
        return r.stdout

    ok("import", str(NCCL_LOG), "--tag", "env=a")
    ok("import", str(NCCL_LOG), "--tag", "env=b")
    ok("import", str(STREAM_LOG), "--tag", "env=a")
    assert "all_reduce" in ok("results", "show", "1")
    ok("results", "list")
    ok("results", "export", "1", "--csv")
    ok("baseline", "create", "1", "-o", str(tmp_path / "base.yaml"))
    r = _run(["validate", "env=a", "--profile", "amd-mi300x-oem"])
    assert r.returncode in (0, 1) and "error" not in r.stderr, r.stderr
    ok("compare", "env=a", "env=b")
    ok("report", "env=a", "env=b", "-o", str(tmp_path / "ab.html"))
    assert (tmp_path / "ab.html").stat().st_size > 1000
    ok("theory", "--link", "100Gbps", "--nodes", "2,4")
    ok("env", "--json")
    bench = _run(["coll", "all_reduce", "-b", "8", "-e", "8", "--np", "2"])
    assert bench.returncode == 2, bench.stderr
    assert bench.stderr.strip().splitlines() == [f"clusterbench: error: {TORCH_MISSING}"]
    for cmd in (["stream"], ["run"], ["gemm"], ["train", "--np", "1"]):
        r = _run(cmd)
        assert r.returncode == 2 and TORCH_MISSING in r.stderr, (cmd, r.stderr)


@pytest.mark.slow
def test_analysis_commands_with_torch_import_blocked(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    _analysis_session(tmp_path, _runner([sys.executable, "-c", BLOCK_TORCH], tmp_path, env))


# -- a real environment without torch -------------------------------------------------------------

WITHOUT = ("torch", "torchgen", "functorch", "triton", "nvidia", "clusterbench", "__editable__",
           "_clusterbench")


def _site_without_torch(dest: Path) -> Path:
    """This machine's site-packages minus torch (and its CUDA libraries), as links: the non-torch
    dependencies without a download. ``.pth`` files stay out (one of them points at an editable
    clusterbench)."""
    dest.mkdir()
    for base in site.getsitepackages():
        for entry in Path(base).iterdir():
            low = entry.name.lower()
            if entry.suffix == ".pth" or low.startswith(WITHOUT) or (dest / entry.name).exists():
                continue
            (dest / entry.name).symlink_to(entry)
    return dest


@pytest.mark.slow
def test_fresh_venv_without_torch(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    deps = _site_without_torch(tmp_path / "deps")
    Path(purelib, "deps.pth").write_text(f"{deps}\n")
    # build from a copy: setuptools writes build/ and egg-info next to the sources
    src = tmp_path / "pkg"
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    r = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                        "--no-build-isolation", str(src)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    probe = subprocess.run([str(py), "-c", "import importlib.util as u, clusterbench; "
                            "print(u.find_spec('torch'), clusterbench.__file__)"],
                           env=env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and probe.stdout.startswith("None "), probe.stdout + probe.stderr
    assert str(venv) in probe.stdout  # the installed copy, not this checkout
    work = tmp_path / "work"
    work.mkdir()
    _analysis_session(work, _runner([str(venv / "bin" / "clusterbench")], work, env))


def _under_address_limit(limit: int, *argv: str) -> subprocess.CompletedProcess:
    import resource

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, preexec_fn=limited)


def test_a_torch_that_cannot_load_under_ulimit_v_says_so(tmp_path):
    # Under `ulimit -v` torch's shared libraries cannot be mapped: the message said PyTorch "is
    # not installed" and sent the user to install it. The limit is one at which this machine's
    # Python and clusterbench start but torch does not load.
    for limit_mb in (800, 1200, 1600, 2000, 2600):
        limit = limit_mb << 20
        torch_loads = _under_address_limit(limit, "-c", "import torch").returncode == 0
        cli_starts = _under_address_limit(limit, "-m", "clusterbench", "--version").returncode == 0
        if cli_starts and not torch_loads:
            break
        if torch_loads:
            pytest.skip(f"torch loads under {limit_mb} MiB of address space, the CLI not below it")
    else:
        pytest.skip("no address-space limit found under which the CLI starts and torch does not load")
    r = _under_address_limit(limit, "-m", "clusterbench", "stream", "--device", "cpu", "-n", "2",
                             "--db", str(tmp_path / "r.db"))
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("clusterbench: error: PyTorch is installed but failed to load ("), r.stderr
    assert "ulimit -v" in r.stderr and "not installed" not in r.stderr and r.stderr.count("\n") == 1
