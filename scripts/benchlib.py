"""What the benchmarks (scripts/bench_*.py) share: their own database and Redis DB, processes started as the
service account, percentiles.

Each benchmark runs on a database of its own (created and migrated on first use; BENCH_DATABASE_URL,
default labqueue_bench on the local PostgreSQL) and a Redis DB of its own (BENCH_REDIS_URL, default DB 7),
so it never touches the demo's or a test's data. Import this module before Django is set up.
"""

import os
import pwd
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parent.parent
SERVICE_ACCOUNT = "labqueue"
DATABASE_URL = os.environ.get("BENCH_DATABASE_URL", "postgresql://labqueue:labqueue@127.0.0.1:5432/labqueue_bench")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/7")
STATE = Path("/var/lib/labqueue/bench")

#: The worker command lines of the production configuration (README, "Operations"): one worker per queue.
WORKERS = (
    "celery -A portal worker -Q submit --concurrency=4 --without-mingle --without-gossip",
    "celery -A portal worker -Q sync --concurrency=1 --without-mingle --without-gossip",
    "celery -A portal worker -Q celery --concurrency=1 --without-mingle --without-gossip",
)


def setup_django(**extra_env: str) -> dict[str, str]:
    """Point Django at the benchmark's database and broker, create and migrate the database, set Django up.
    Returns the environment the portal's own processes (worker, web server) get."""
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
        "DATABASE_URL": DATABASE_URL,
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
    _database_create()
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    env["BENCH_RUN_DIR"] = str(run_dir)
    return env


def run_dir_remove(env: dict[str, str]) -> None:
    """Remove the run's job directories and uploads (its logs stay)."""
    shutil.rmtree(env["LABQUEUE_JOB_ROOT"], ignore_errors=True)
    shutil.rmtree(env["LABQUEUE_MEDIA_ROOT"], ignore_errors=True)


def _database_create() -> None:
    import psycopg

    url = urlparse(DATABASE_URL)
    name = url.path.lstrip("/")
    admin = url._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            connection.execute(f'CREATE DATABASE "{name}"')


def redis_flush() -> None:
    """Empty the benchmark's Redis DB (queued tasks left by an earlier run)."""
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
