"""A real single-node SLURM cluster on localhost, for tests and CI.

Not a mock: Debian's ``slurmctld`` + ``slurmd`` + ``munged``, started as daemons with their state,
spool, PID and log files in a temporary directory, and stopped again by PID afterwards.

Facts this relies on (``shared/notes/engines.md``, measured on Debian 12 / Slurm 22.05):

* ``slurm.conf`` must be at ``/etc/slurm/slurm.conf``: the executor plugin strips ``SLURM_*``
  variables before its nested ``srun``, so ``SLURM_CONF`` alone is not enough. An existing file
  there is backed up and restored on exit.
* Without slurmdbd there is no ``sacct``; job records come from the controller log
  (``_slurm_rpc_submit_batch_job`` / ``_job_complete``), from ``scontrol show job`` (kept for
  ``MinJobAge`` seconds) and from the job-completion log (``jobcomp/filetxt``, one line per
  finished job with its ``JobState``).
* The node advertises fake GPUs (``gres.conf`` pointing at character devices) so that jobs that
  request ``--gpus``/``--gres=gpu`` are scheduled exactly as on a GPU cluster.

Usage::

    with SlurmCluster(tmp_path) as cluster:
        ...  # sbatch / snakemake --profile slurm
        cluster.submitted_job_ids(); cluster.job_records(); cluster.show_job(jid)

or the ``slurm_cluster`` pytest fixture (module scope).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INSTALL_SCRIPT = REPO / ".ci" / "install_slurm.sh"
ETC = Path("/etc/slurm")
BINARIES = ("slurmctld", "slurmd", "munged", "sbatch", "squeue", "scontrol", "sinfo", "srun")
N_FAKE_GPUS = 2
FAKE_GPU_TYPE = "fake"


class SlurmUnavailable(RuntimeError):
    """SLURM cannot be installed or started on this machine (tests skip LOUDLY on this)."""


def _which_all() -> list[str]:
    extra = os.pathsep.join(["/usr/sbin", "/sbin"])
    path = os.environ.get("PATH", "") + os.pathsep + extra
    return [b for b in BINARIES if shutil.which(b, path=path) is None]


def ensure_slurm_installed() -> None:
    """Install slurmctld/slurmd/slurm-client/munge with ``.ci/install_slurm.sh`` if missing.

    Raises :class:`SlurmUnavailable` with the reason when that is impossible (not root, no
    apt-get, no network, ...)."""
    missing = _which_all()
    if not missing:
        return
    if os.geteuid() != 0:
        raise SlurmUnavailable(f"SLURM binaries missing ({', '.join(missing)}) and not root: "
                               f"cannot run {INSTALL_SCRIPT}")
    if shutil.which("apt-get") is None:
        raise SlurmUnavailable(f"SLURM binaries missing ({', '.join(missing)}) and no apt-get")
    proc = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=600)
    missing = _which_all()
    if proc.returncode != 0 or missing:
        raise SlurmUnavailable(f"{INSTALL_SCRIPT} failed (rc={proc.returncode}, still missing: "
                               f"{missing}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


def _sbin(name: str) -> str:
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") or name


def _pid_cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _read_pid(pidfile: Path) -> int | None:
    try:
        return int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _stop_pid(pidfile: Path, program: str, timeout: float = 10.0) -> None:
    """SIGTERM the PID in ``pidfile`` if (and only if) it still belongs to ``program``."""
    pid = _read_pid(pidfile)
    if pid is None or _pid_cmd(pid) != program[:15]:
        return
    try:
        os.kill(pid, 15)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _pid_cmd(pid) != program[:15]:
            return
        time.sleep(0.1)
    if _pid_cmd(pid) == program[:15]:
        os.kill(pid, 9)


@dataclass
class SlurmCluster:
    """Context manager: a one-node SLURM (``partition``) on 127.0.0.1 rooted at ``root``."""

    root: Path | None = None
    partition: str = "ci"
    min_job_age: int = 3600   # records outlive a slow (loaded) pipeline run; checked job by job after it
    cpus: int = field(default_factory=lambda: os.cpu_count() or 1)
    started: bool = False

    def __post_init__(self) -> None:
        self._own_root = self.root is None
        self.root = Path(self.root or tempfile.mkdtemp(prefix="embtune-slurm-")).resolve()
        self.host = socket.gethostname().split(".")[0]
        self.state = self.root / "state"
        self.spool = self.root / "spool"
        self.log_dir = self.root / "log"
        self.run_dir = self.root / "run"
        self.ctld_log = self.log_dir / "slurmctld.log"
        self.slurmd_log = self.log_dir / "slurmd.log"
        self.jobcomp_log = self.log_dir / "jobcomp.log"
        self.ctld_pid = self.run_dir / "slurmctld.pid"
        self.slurmd_pid = self.run_dir / "slurmd.pid"
        self.munge_pid = Path("/run/munge/munged.pid")  # munged's default; it vets its dirs
        self.munge_sock = Path("/run/munge/munge.socket.2")
        self._backups: dict[Path, Path | None] = {}
        self._started_munge = False

    # ------------------------------------------------------------------ configuration
    def _mem_mb(self) -> int:
        with open("/proc/meminfo") as fh:
            kb = int(next(line for line in fh if line.startswith("MemTotal")).split()[1])
        return int(kb / 1024 * 0.9)

    def slurm_conf(self) -> str:
        return "\n".join([
            "ClusterName=embtune-ci",
            f"SlurmctldHost={self.host}(127.0.0.1)",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "MpiDefault=none",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "SlurmdParameters=config_overrides",
            "ReturnToService=2",
            "GresTypes=gpu",
            f"StateSaveLocation={self.state}",
            f"SlurmdSpoolDir={self.spool}",
            f"SlurmctldPidFile={self.ctld_pid}",
            f"SlurmdPidFile={self.slurmd_pid}",
            f"SlurmctldLogFile={self.ctld_log}",
            f"SlurmdLogFile={self.slurmd_log}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "SlurmctldPort=6817",
            "SlurmdPort=6818",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={self.jobcomp_log}",
            f"MinJobAge={self.min_job_age}",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=sched_interval=2",
            "InactiveLimit=0",
            "KillWait=5",
            "Waittime=0",
            f"NodeName={self.host} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={self._mem_mb()} "
            f"Gres=gpu:{FAKE_GPU_TYPE}:{N_FAKE_GPUS} State=UNKNOWN",
            f"PartitionName={self.partition} Nodes={self.host} Default=YES MaxTime=INFINITE State=UP",
            "",
        ])

    def gres_conf(self) -> str:
        # Character devices stand in for /dev/nvidia*; nothing opens them.
        devs = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random"][:N_FAKE_GPUS]
        lines = ["AutoDetect=off"]
        lines += [f"NodeName={self.host} Name=gpu Type={FAKE_GPU_TYPE} File={d}" for d in devs]
        return "\n".join(lines) + "\n"

    def _install_conf(self, name: str, text: str) -> None:
        ETC.mkdir(parents=True, exist_ok=True)
        target = ETC / name
        if target not in self._backups:
            if target.exists() or target.is_symlink():
                backup = self.root / f"{name}.orig"
                shutil.copy2(target, backup, follow_symlinks=False)
                self._backups[target] = backup
            else:
                self._backups[target] = None
        target.write_text(text)

    def _restore_conf(self) -> None:
        for target, backup in self._backups.items():
            try:
                if backup is None:
                    target.unlink(missing_ok=True)
                else:
                    shutil.copy2(backup, target, follow_symlinks=False)
            except OSError:
                pass
        self._backups.clear()

    # ------------------------------------------------------------------ daemons
    def _munge_ok(self) -> bool:
        if shutil.which("munge") is None or shutil.which("unmunge") is None:
            return self.munge_sock.exists()
        p = subprocess.run("munge -n | unmunge", shell=True, capture_output=True, timeout=20)
        return p.returncode == 0

    def _start_munge(self) -> None:
        if self.munge_sock.exists() and self._munge_ok():
            return  # a munged is already serving (CI host or a developer's machine): reuse it
        key = Path("/etc/munge/munge.key")
        if not key.exists():
            key.parent.mkdir(parents=True, exist_ok=True)
            key.write_bytes(os.urandom(1024))
        subprocess.run(["chown", "munge:munge", str(key)], check=True)
        key.chmod(0o400)
        for d in ("/run/munge", "/var/lib/munge", "/var/log/munge"):
            subprocess.run(["install", "-d", "-o", "munge", "-g", "munge", "-m", "0755", d], check=True)
        subprocess.run(["runuser", "-u", "munge", "--", _sbin("munged"), "--force"], check=True,
                       capture_output=True, timeout=30)
        self._started_munge = True
        self._wait(self._munge_ok, 20, "munged did not come up")

    def _wait(self, pred, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred():
                return
            time.sleep(0.25)
        raise SlurmUnavailable(f"{what} within {timeout:.0f} s\n{self.diagnostics()}")

    def node_state(self) -> str:
        p = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
        return p.stdout.strip()

    def start(self) -> "SlurmCluster":
        ensure_slurm_installed()
        for d in (self.state, self.spool, self.log_dir, self.run_dir):
            d.mkdir(parents=True, exist_ok=True)
        for pidfile, prog in ((self.ctld_pid, "slurmctld"), (self.slurmd_pid, "slurmd")):
            pid = _read_pid(Path("/run") / pidfile.name)
            if pid and _pid_cmd(pid) == prog:
                raise SlurmUnavailable(f"a system {prog} is already running (pid {pid}); "
                                       "refusing to replace its configuration")
        self._install_conf("slurm.conf", self.slurm_conf())
        self._install_conf("gres.conf", self.gres_conf())
        try:
            self._start_munge()
            subprocess.run([_sbin("slurmctld"), "-i"], check=True, capture_output=True, timeout=60)
            subprocess.run([_sbin("slurmd")], check=True, capture_output=True, timeout=60)
            self.started = True
            self._wait(lambda: self.node_state() in ("idle", "mixed"), 60,
                       "the SLURM node did not become idle")
        except (subprocess.CalledProcessError, SlurmUnavailable) as exc:
            self.stop()
            if isinstance(exc, subprocess.CalledProcessError):
                raise SlurmUnavailable(f"{exc.cmd} failed: {exc.stderr!r}\n{self.diagnostics()}") from exc
            raise
        return self

    def stop(self) -> None:
        _stop_pid(self.slurmd_pid, "slurmd")
        _stop_pid(self.ctld_pid, "slurmctld")
        if self._started_munge:
            _stop_pid(self.munge_pid, "munged")
            self._started_munge = False
        self._restore_conf()
        self.started = False

    def __enter__(self) -> "SlurmCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def cleanup(self) -> None:
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    # ------------------------------------------------------------------ SLURM's own records
    def diagnostics(self) -> str:
        parts = []
        for log in (self.ctld_log, self.slurmd_log):
            if log.exists():
                parts.append(f"--- {log} (tail)\n" + "\n".join(log.read_text(errors="replace").splitlines()[-30:]))
        return "\n".join(parts)

    def submitted_job_ids(self) -> list[int]:
        """Job ids from the controller log's ``_slurm_rpc_submit_batch_job`` lines (sbatch RPCs)."""
        text = self.ctld_log.read_text(errors="replace") if self.ctld_log.exists() else ""
        return [int(m) for m in re.findall(r"_slurm_rpc_submit_batch_job: JobId=(\d+)", text)]

    def completed_job_ids(self) -> dict[int, int]:
        """JobId -> exit status from the controller log's ``_job_complete ... WEXITSTATUS`` lines."""
        text = self.ctld_log.read_text(errors="replace") if self.ctld_log.exists() else ""
        return {int(j): int(s) for j, s in re.findall(r"_job_complete: JobId=(\d+) WEXITSTATUS (\d+)", text)}

    def job_records(self) -> dict[int, dict[str, str]]:
        """The job-completion log (``jobcomp/filetxt``): JobId -> {JobName, JobState, ExitCode, ...}."""
        out: dict[int, dict[str, str]] = {}
        if not self.jobcomp_log.exists():
            return out
        for line in self.jobcomp_log.read_text(errors="replace").splitlines():
            rec = dict(re.findall(r"(\w+)=(\S*)", line))
            if "JobId" in rec:
                out[int(rec["JobId"])] = rec
        return out

    def show_job(self, job_id: int) -> dict[str, str]:
        """``scontrol show job -o <id>`` as a dict (records live for ``MinJobAge`` seconds)."""
        p = subprocess.run(["scontrol", "show", "job", "-o", str(job_id)],
                           capture_output=True, text=True, timeout=20)
        if p.returncode != 0:
            return {}
        return dict(re.findall(r"(\w+)=(\S*)", p.stdout))

    def wait_for_records(self, job_ids: list[int], timeout: float = 30) -> None:
        """The completion log is written asynchronously; wait until it holds every job."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if set(job_ids) <= set(self.job_records()):
                return
            time.sleep(0.25)


try:  # the pytest fixture (the module is importable without pytest, e.g. from .ci scripts)
    import pytest

    @pytest.fixture(scope="module")
    def slurm_cluster(tmp_path_factory):
        """A running single-node SLURM; skips LOUDLY (never silently) if it cannot be had."""
        root = tmp_path_factory.mktemp("slurm")
        cluster = SlurmCluster(root)
        try:
            if os.geteuid() != 0:
                raise SlurmUnavailable("not root: cannot write /etc/slurm/slurm.conf (the executor's "
                                       "srun ignores SLURM_CONF) nor start munged/slurmd")
            cluster.start()
        except (SlurmUnavailable, OSError, subprocess.SubprocessError) as exc:
            cluster.stop()
            if os.environ.get("EMBTUNE_REQUIRE_SLURM") == "1":
                pytest.fail(f"EMBTUNE_REQUIRE_SLURM=1 but SLURM is unavailable: {exc}")
            banner = "!" * 78
            msg = (f"\n{banner}\nSKIPPING THE REAL-SLURM TEST: SLURM could not be installed/started "
                   f"on this machine.\n{exc}\n{banner}")
            print(msg, flush=True)
            import sys
            print(msg, file=sys.stderr, flush=True)
            pytest.skip(msg)
        try:
            yield cluster
        finally:
            cluster.stop()
except ImportError:  # pragma: no cover
    pass


if __name__ == "__main__":  # manual smoke test: python tests/slurm_cluster.py
    with SlurmCluster() as c:
        print("node:", c.node_state())
        out = subprocess.run(["sbatch", "--parsable", "--wrap", "echo $SLURM_JOB_ID"],
                             capture_output=True, text=True)
        print("sbatch:", out.stdout, out.stderr)
        c.wait_for_records([int(out.stdout.strip())])
        print(c.diagnostics())
        print("submitted:", c.submitted_job_ids(), "completed:", c.completed_job_ids())
        print("records:", c.job_records())
