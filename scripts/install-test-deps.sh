#!/usr/bin/env bash
# Installs what the test suite needs: Debian packages for the launcher, network, browser,
# PostgreSQL store and Prometheus feed tests (when running as root), then clusterbench with its
# test extra into the virtual environment named by $1 (default .venv), made if it is missing:
# a fresh one holds only what pyproject.toml declares, so an undeclared dependency fails here.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv}

DEBS=(openmpi-bin libopenmpi-dev iperf3 slurm-wlm munge chromium iputils-ping iproute2 procps prometheus)
BINS=(mpirun mpirun iperf3 slurmctld munged chromium ping ip ps prometheus)

missing=()
for i in "${!DEBS[@]}"; do
  command -v "${BINS[$i]}" >/dev/null 2>&1 || [ -x "/usr/sbin/${BINS[$i]}" ] || missing+=("${DEBS[$i]}")
done
# The PostgreSQL server for the store tests (they start their own throwaway cluster); its
# binaries are not on PATH.
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
PYTHON=${PYTHON:-python3}
# Debian's own Python makes virtual environments only with python3-venv.
"$PYTHON" -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "warning: missing ${missing[*]} (not root or no apt-get): tests that need them will skip" >&2
  fi
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e '.[test]'
