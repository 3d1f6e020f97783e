#!/usr/bin/env bash
# Installs what the test suite needs: Debian packages for the launcher, network, browser,
# PostgreSQL store and Prometheus feed tests (when running as root), then clusterbench itself
# with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBS=(openmpi-bin libopenmpi-dev iperf3 slurm-wlm munge chromium iputils-ping iproute2 procps prometheus)
BINS=(mpirun mpirun iperf3 slurmctld munged chromium ping ip ps prometheus)

missing=()
for i in "${!DEBS[@]}"; do
  command -v "${BINS[$i]}" >/dev/null 2>&1 || [ -x "/usr/sbin/${BINS[$i]}" ] || missing+=("${DEBS[$i]}")
done
# The PostgreSQL server for the store tests (they start their own throwaway cluster); its
# binaries are not on PATH.
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "warning: missing ${missing[*]} (not root or no apt-get): tests that need them will skip" >&2
  fi
fi

python -m pip install -q --disable-pip-version-check -e '.[test]'
