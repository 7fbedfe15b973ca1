"""A remote execution grid on this machine: PostgreSQL, BuildGrid and N `mcpp worker` processes.

    python scripts/buildgrid/local_grid.py [--workers N] [--slots N] [--dir DIR]

prints the `--remote` URL and runs until Ctrl-C (run-local-grid.sh wraps it). The tests
(`tests/e2e/test_remote_exec.py`) and the benchmark (`bench/bench_remote_exec.py`) use the
`LocalGrid` class directly.

- PostgreSQL: a private cluster (`initdb` into DIR/pg, `pg_ctl start`) listening only on a unix
  socket in DIR (no TCP port), with `bgd migrate apply` run on a fresh `bgd` database. PostgreSQL
  refuses to run as root: as root, the cluster is made and run as the `postgres` user.
- BuildGrid: `bgd server start` of `buildgrid.yml.in` with its names filled in, on DIR/bgd.sock.
- workers: `mcpp worker --remote unix:DIR/bgd.sock --slots S --log DIR/worker-I.log`, each with
  `MCPP_HOME=DIR/worker-I` (its own CAS cache), in a process group of its own.

Everything is stopped by pid (never by name) and DIR removed by `stop()`.
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PG_BIN_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/local/bin", "/usr/bin")


def _pg_tool(name: str) -> str:
    for d in PG_BIN_DIRS:
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(f"PostgreSQL's `{name}` is not installed (apt install postgresql-15)")


def _venv_bin(name: str) -> str:
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"`{name}` is not installed (pip install -e '.[test]')")
    return found


class LocalGrid:
    def __init__(self, root: str | None = None, keepalive: int = 4, instance: str = "") -> None:
        # Short: a unix socket path must fit in 107 bytes.
        self.dir = Path(root or tempfile.mkdtemp(prefix="grid-", dir="/tmp"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.keepalive = keepalive
        self.instance = instance
        self.socket = self.dir / "bgd.sock"
        # The cluster's own directory (its data and its socket): PostgreSQL's user owns it and
        # nothing else, so the rest of DIR stays the caller's (the workers' sandboxes live there).
        self.pg_home = self.dir / "pg"
        self.pg_dir = self.pg_home / "data"
        self.bgd: subprocess.Popen | None = None
        self.workers: dict[int, subprocess.Popen] = {}
        self._as_postgres = os.geteuid() == 0
        self._pg_started = False

    @property
    def url(self) -> str:
        return f"unix:{self.socket}"

    @property
    def sql_url(self) -> str:
        user = "postgres" if self._as_postgres else pwd.getpwuid(os.geteuid()).pw_name
        return f"postgresql+psycopg2://{user}@/bgd?host={self.pg_home}"

    # --- PostgreSQL -------------------------------------------------------------------------

    def _pg(self, *argv: str) -> None:
        cmd = list(argv)
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)

    def start_postgres(self) -> None:
        self.pg_home.mkdir(mode=0o700, exist_ok=True)
        if self._as_postgres:
            os.chmod(self.dir, 0o711)  # postgres may pass through DIR to its own directory, no more
            shutil.chown(self.pg_home, user="postgres")
        user = "postgres" if self._as_postgres else pwd.getpwuid(os.geteuid()).pw_name
        self._pg(_pg_tool("initdb"), "-D", str(self.pg_dir), "-A", "trust", "-U", user, "--no-sync", "-E", "UTF8")
        self._pg(_pg_tool("pg_ctl"), "-D", str(self.pg_dir), "-l", str(self.pg_home / "pg.log"), "-w", "-o",
                 f"-k {self.pg_home} -c listen_addresses='' -F -c max_connections=200", "start")
        self._pg_started = True
        self._pg(_pg_tool("createdb"), "-h", str(self.pg_home), "-U", user, "bgd")
        subprocess.run([_venv_bin("bgd"), "migrate", "apply", self.sql_url], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    # --- BuildGrid --------------------------------------------------------------------------

    def start_buildgrid(self, timeout: float = 60.0) -> None:
        text = (HERE / "buildgrid.yml.in").read_text()
        for name, value in {"ADDRESS": self.url, "INSTANCE": self.instance, "SQL": self.sql_url,
                            "CAS_DIR": str(self.dir / "cas"), "KEEPALIVE": str(self.keepalive)}.items():
            text = text.replace(f"@{name}@", value)
        config = self.dir / "buildgrid.yml"
        config.write_text(text)
        with open(self.dir / "bgd.log", "wb") as log:
            self.bgd = subprocess.Popen([_venv_bin("bgd"), "server", "start", str(config)], stdout=log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True, cwd=self.dir)
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        from mcpp.cas.remote.client import RemoteClient, RemoteError

        deadline = time.monotonic() + timeout
        while True:
            if self.bgd.poll() is not None:
                raise RuntimeError(f"bgd exited with {self.bgd.returncode}:\n{self.log_tail('bgd.log')}")
            if self.socket.exists():
                client = RemoteClient(self.url, self.instance, timeout=2.0)
                try:
                    client.connect(timeout=2.0)
                    return
                except RemoteError:
                    pass
                finally:
                    client.close()
            if time.monotonic() > deadline:
                raise TimeoutError(f"BuildGrid did not answer in {timeout:.0f}s:\n{self.log_tail('bgd.log')}")
            time.sleep(0.1)

    # --- workers ----------------------------------------------------------------------------

    def start_worker(self, i: int, slots: int = 1, mcpp: str | None = None, env: dict | None = None) -> None:
        home = self.dir / f"worker-{i}"
        home.mkdir(exist_ok=True)
        exe = mcpp or _venv_bin("mcpp")
        full_env = {**os.environ, **(env or {}), "MCPP_HOME": str(home)}
        with open(self.dir / f"worker-{i}.err", "ab") as err:
            self.workers[i] = subprocess.Popen(
                [exe, "worker", "--remote", self.url, "--instance", self.instance, "--slots", str(slots),
                 "--name", f"worker-{i}", "--log", str(self.worker_log(i))],
                stdout=err, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                env=full_env)

    def worker_log(self, i: int) -> Path:
        return self.dir / f"worker-{i}.log"

    def wait_workers(self, timeout: float = 60.0) -> None:
        """Until every started worker has logged `worker-started` (connected, sandbox ready)."""
        deadline = time.monotonic() + timeout
        for i, proc in self.workers.items():
            while not any(e.get("event") == "worker-started" for e in self.events(i)):
                if proc.poll() is not None:
                    raise RuntimeError(f"worker {i} exited with {proc.returncode}:\n"
                                       f"{self.log_tail(f'worker-{i}.err')}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"worker {i} did not start:\n{self.log_tail(f'worker-{i}.err')}")
                time.sleep(0.1)

    def events(self, i: int) -> list[dict]:
        try:
            lines = self.worker_log(i).read_text().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass  # a line cut short by SIGKILL
        return out

    def kill_worker(self, i: int, sig: int = signal.SIGKILL) -> None:
        """Kill worker `i` and its sandboxed children (its process group), by pid."""
        proc = self.workers.pop(i, None)
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    # --- all --------------------------------------------------------------------------------

    def start(self, workers: int = 2, slots: int = 1) -> "LocalGrid":
        try:
            self.start_postgres()
            self.start_buildgrid()
            for i in range(workers):
                self.start_worker(i, slots)
            self.wait_workers()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, remove: bool = True) -> None:
        for i in list(self.workers):
            self.kill_worker(i, signal.SIGTERM)
        if self.bgd is not None and self.bgd.poll() is None:
            os.killpg(self.bgd.pid, signal.SIGTERM)
            try:
                self.bgd.wait(timeout=3)
            except subprocess.TimeoutExpired:
                os.killpg(self.bgd.pid, signal.SIGKILL)
                self.bgd.wait(timeout=10)
        self.bgd = None
        if self._pg_started:
            try:
                self._pg(_pg_tool("pg_ctl"), "-D", str(self.pg_dir), "-m", "immediate", "-w", "stop")
            except subprocess.CalledProcessError:
                pass
            self._pg_started = False
        if remove:
            shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self, name: str, n: int = 4000) -> str:
        try:
            return (self.dir / name).read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def __enter__(self) -> "LocalGrid":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--slots", type=int, default=1)
    ap.add_argument("--dir", default=None, help="where the cluster, the server's CAS and the logs live")
    ap.add_argument("--keepalive", type=int, default=30, help="seconds before a silent worker counts as dead")
    args = ap.parse_args()
    grid = LocalGrid(args.dir, keepalive=args.keepalive)
    grid.start(args.workers, args.slots)
    print(f"grid ready: mcpp build --remote {grid.url} --remote-exec   (logs in {grid.dir}; Ctrl-C stops)",
          flush=True)
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        grid.stop(remove=args.dir is None)
    return 0


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    sys.exit(main())
