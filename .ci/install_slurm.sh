#!/usr/bin/env bash
# Install a single-node SLURM toolchain (Debian/Ubuntu): slurmctld, slurmd, the client commands
# and munge. Idempotent and quiet; needs root (or passwordless sudo) and apt. The daemons are NOT
# started here: tests/slurm_cluster.py starts them in a temp dir and stops them by PID.
# Exit status: 0 = everything installed; 1 = could not install (the SLURM test then skips LOUDLY).
set -euo pipefail

need=()
for bin in slurmctld slurmd sbatch squeue scontrol sinfo srun munged; do
    command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ] || need+=("$bin")
done
if [ ${#need[@]} -eq 0 ]; then
    echo "install_slurm: already installed ($(sinfo --version 2>/dev/null || echo slurm))"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
        echo "install_slurm: not root and no passwordless sudo; missing: ${need[*]}" >&2; exit 1; fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_slurm: no apt-get on this machine; missing: ${need[*]}" >&2; exit 1
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
# Update the package lists only when they are missing or the install fails without an update.
if ! $SUDO apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >"$log" 2>&1; then
    $SUDO apt-get update -qq >>"$log" 2>&1 || true
    if ! $SUDO apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >>"$log" 2>&1; then
        echo "install_slurm: apt-get install failed:" >&2; tail -20 "$log" >&2; rm -f "$log"; exit 1
    fi
fi
rm -f "$log"
echo "install_slurm: installed $(sinfo --version 2>/dev/null || echo slurm)"
