"""What the benchmarks (scripts/bench_*.py) share: their own database and Redis DB, the portal started as in
production (deploy/entrypoint, as the service account), the CPU time of processes, percentiles.

Each benchmark runs on a database of its own (created and migrated on first use; BENCH_DATABASE_URL,
default labqueue_bench on the local PostgreSQL) and a Redis DB of its own (BENCH_REDIS_URL, default DB 7),
so it never touches the demo's or a test's data. Import this module before Django is set up.
"""

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parent.parent
SERVICE_ACCOUNT = "labqueue"
DATABASE_URL = os.environ.get("BENCH_DATABASE_URL", "postgresql://labqueue:labqueue@127.0.0.1:5432/labqueue_bench")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/7")
STATE = Path("/var/lib/labqueue/bench")

#: The production workers (README, "Workers and queues"): `deploy/entrypoint worker <queue>`, one per queue.
WORKER_QUEUES = ("submit", "sync", "maintenance")


def setup_django(*, database_url: str = DATABASE_URL, **extra_env: str) -> dict[str, str]:
    """Point Django at the database (the benchmarks' own unless named) and broker, create and migrate the
    database, set Django up. Returns the environment the portal's own processes (worker, web server) get."""
    sys.path.insert(0, str(REPO))
    STATE.mkdir(parents=True, exist_ok=True)
    run_dir = STATE / secrets.token_hex(6)
    job_root, media = run_dir / "jobs", run_dir / "media"
    for folder in (run_dir, job_root, media):
        folder.mkdir()
    account = pwd.getpwnam(SERVICE_ACCOUNT)
    os.chown(run_dir, 0, account.pw_gid)
    os.chmod(run_dir, 0o755)  # the students reach the job root through it
    os.chown(job_root, 0, account.pw_gid)
    os.chmod(job_root, 0o2751)  # as a production job root (README, "Privilege model")
    os.chown(media, account.pw_uid, account.pw_gid)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "LANG": "C.UTF-8",
        "HOME": "/var/lib/labqueue",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DATABASE_URL": database_url,
        "LABQUEUE_REDIS_URL": REDIS_URL,
        "LABQUEUE_SECRET_KEY": os.environ.get("LABQUEUE_SECRET_KEY") or secrets.token_urlsafe(48),
        "LABQUEUE_JOB_ROOT": str(job_root),
        "LABQUEUE_MEDIA_ROOT": str(media),
        "LABQUEUE_SLURM_RUN_AS_PREFIX": "sudo -n -u {user}",
        "LABQUEUE_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LABQUEUE_LOG_FORMAT": "text",
        **extra_env,
    }
    os.environ.update(env)
    _database_create(database_url)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    env["BENCH_RUN_DIR"] = str(run_dir)
    return env


def run_dir_remove(env: dict[str, str]) -> None:
    """Remove the run's job directories, uploads and beat's schedule (its logs stay)."""
    shutil.rmtree(env["LABQUEUE_JOB_ROOT"], ignore_errors=True)
    shutil.rmtree(env["LABQUEUE_MEDIA_ROOT"], ignore_errors=True)
    shutil.rmtree(Path(env["BENCH_RUN_DIR"]) / "beat", ignore_errors=True)


def database_url_named(suffix: str) -> str:
    """The URL of a database of one benchmark's own beside the shared one: `<BENCH_DATABASE_URL's name>_<suffix>`."""
    url = urlparse(DATABASE_URL)
    return url._replace(path=f"{url.path}_{suffix}").geturl()


def _database_create(database_url: str) -> None:
    import psycopg

    url = urlparse(database_url)
    name = url.path.lstrip("/")
    admin = url._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            connection.execute(f'CREATE DATABASE "{name}"')


def database_drop(database_url: str) -> None:
    """Drop the database (closing any connection still open to it); nothing when it does not exist."""
    import psycopg

    url = urlparse(database_url)
    admin = url._replace(path="/postgres").geturl()
    name = url.path.lstrip("/")
    with psycopg.connect(admin, autocommit=True) as connection:
        # Not WITH (FORCE): that refuses to stop an autovacuum worker unless the role may signal any backend.
        # The benchmark's own connections are closed here; a plain DROP waits a few seconds for sessions to end
        # and stops an autovacuum worker itself.
        connection.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND usename = current_user AND pid <> pg_backend_pid()",
            [name],
        )
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')


def database_use(database_url: str) -> None:
    """Point this process's Django at another database of the same server (created and migrated on first use): a
    benchmark that measures two data sets in one run."""
    from django.core.management import call_command
    from django.db import connection

    _database_create(database_url)
    connection.close()
    connection.settings_dict["NAME"] = urlparse(database_url).path.lstrip("/")
    call_command("migrate", verbosity=0)


def redis_flush() -> None:
    """Empty the benchmark's Redis DB (queued tasks and sessions left by an earlier run or by this one)."""
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()


def as_service_account(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start a portal process as the service account, in its own session, its output in `log`."""
    with open(log, "ab") as handle:
        return subprocess.Popen(
            ["/usr/sbin/runuser", "-u", SERVICE_ACCOUNT, "--", *argv],
            env=env,
            cwd=REPO,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def venv_bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def portal_start(env: dict[str, str], run_dir: Path) -> tuple[dict[str, subprocess.Popen], int]:
    """The portal as the systemd units start it, as the service account: `deploy/entrypoint web` (gunicorn with
    deploy/gunicorn.conf.py and its defaults), `worker <queue>` for each queue and `beat`, each with its own log
    in the run directory. Returns the processes ("gunicorn", the queues, "beat") and the web server's port."""
    web_port = free_port()
    beat_dir = run_dir / "beat"  # beat writes its schedule here
    beat_dir.mkdir()
    shutil.chown(beat_dir, SERVICE_ACCOUNT, SERVICE_ACCOUNT)
    env = {**env, "LABQUEUE_PYTHON": sys.executable, "LABQUEUE_BEAT_SCHEDULE": str(beat_dir / "schedule")}
    entrypoint = str(REPO / "deploy" / "entrypoint")
    web_env = {**env, "LABQUEUE_WEB_BIND": f"127.0.0.1:{web_port}"}
    processes = {"gunicorn": as_service_account([entrypoint, "web"], web_env, run_dir / "gunicorn.log")}
    for queue in WORKER_QUEUES:
        processes[queue] = as_service_account([entrypoint, "worker", queue], env, run_dir / f"{queue}.log")
    processes["beat"] = as_service_account([entrypoint, "beat"], env, run_dir / "beat.log")
    wait_for_text(run_dir / "gunicorn.log", "Booting worker", seconds=60)
    for queue in WORKER_QUEUES:
        wait_for_text(run_dir / f"{queue}.log", " ready.", seconds=90)
    return processes, web_port


@dataclass(frozen=True)
class ProcessCpu:
    """A live process's CPU seconds from /proc/<pid>/stat: its own (utime + stime) and those of the children it
    has reaped (cutime + cstime: a child's own and its reaped children's, and so on down)."""

    pid: int
    name: str  # comm: the program's name (PostgreSQL's backends keep "postgres")
    session: int
    own: float
    children: float


def processes_cpu() -> list[ProcessCpu]:
    """Every live process's CPU seconds so far."""
    tick = os.sysconf("SC_CLK_TCK")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it ended meanwhile
            continue
        name, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        own, children = int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])
        found.append(ProcessCpu(int(entry.name), name, int(fields[3]), own / tick, children / tick))
    return found


def stop(process: subprocess.Popen) -> None:
    """Stop a process this benchmark started, and everything it started (its own session)."""
    import signal

    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def wait_for_text(log: Path, text: str, count: int = 1, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while log.read_text(errors="replace").count(text) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {text!r} in {log}:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (share 0.5 = median, 0.95 = p95) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, round(share * len(ordered) + 0.4999))
    return ordered[min(rank, len(ordered)) - 1]


def summary(values: list[float]) -> str:
    """p50/p95/max of durations in seconds, as milliseconds."""
    if not values:
        return "no samples"
    return f"p50 {percentile(values, 0.5) * 1000:7.0f} ms  p95 {percentile(values, 0.95) * 1000:7.0f} ms  " + (
        f"max {max(values) * 1000:7.0f} ms"
    )


def root_required() -> None:
    if os.geteuid() != 0:
        raise SystemExit("Run it as root (it runs commands as the lab's students and the service account).")
