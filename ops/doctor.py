"""The checks `manage.py doctor` runs after an install or an upgrade: each says OK or FAIL and, when it
fails, what to do about it in plain words. Run as the account the web server and worker run as: what it
may read, write and run through sudo is what is being checked.

A check that cannot be done without a test user (`--user NETID`, a student's cluster account) says SKIP.
A setting the portal can run with but a site should choose itself (a ceiling left to its default) says WARN.
Every Slurm and munge command goes through slurm.runner (argv lists, timeouts). Nothing here changes the
portal's data; the job-files check leaves one small job directory, always the same one, under the test
user's directory in the job root.
"""

import grp
import os
import pwd
import re
import shutil
import stat
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

import slurm
from courses.models import Assignment
from courses.scripting import SCRIPT_NAME
from jobs.workdir import WorkdirError, WorkdirUnavailable, job_workdir, workdir_probe
from ops.health import job_sync_last, job_sync_period, late_after
from portal.celery import app
from portal.identity import netid_refusal
from slurm import runner

OK, FAIL, SKIP, WARN = "OK", "FAIL", "SKIP", "WARN"
#: The job-dir helper's code, installed beside its launcher (LABQUEUE_JOBDIR_HELPER) and byte-compiled there.
HELPER_MODULE = "labqueue_jobdir.py"

#: The Slurm client tools the portal runs (sinfo: the one sites compare first).
SLURM_TOOLS = ("sinfo", "sbatch", "squeue", "scancel", "sacct", "sacctmgr", "scontrol")
#: Slurm's major releases in order. A controller talks to clients up to two major releases older
#: (three from 24.11 on), never to newer ones.
SLURM_MAJORS = ("17.02", "17.11", "18.08", "19.05", "20.02", "20.11", "21.08", "22.05", "23.02", "23.11")
SLURM_MAJORS += ("24.05", "24.11", "25.05", "25.11")
#: The job directory the job-files check makes for the test user (the same one every time).
PROBE_JOB_UUID = str(uuid.uuid5(uuid.NAMESPACE_URL, "labqueue:doctor"))
#: Checks of what the service account may do: root may do everything, so they say nothing when run as root.
AS_SERVICE_ACCOUNT = ("job root", "run-as", "job files")
#: The job root's mode (scripts/labcluster ensure_service_account, README "Privilege model").
JOB_ROOT_MODE = 0o2751


@dataclass(frozen=True)
class Result:
    name: str
    status: str
    detail: str
    fix: str = ""


def doctor_run(*, user: str | None = None) -> list[Result]:
    """Every check, in the order an operator would fix them."""
    checks: list[tuple[str, Callable[[], Result]]] = [
        ("account", _account),
        ("database", _database),
        ("broker", _broker),
        ("slurm versions", _slurm_versions),
        ("munge", _munge),
        ("other clusters", _other_clusters),
        ("job-dir helper", _helper),
        ("job root", _job_root),
        ("run-as", lambda: _run_as(user)),
        ("job files", lambda: _job_files(user)),
        ("static files", _static_files),
        ("beat", _beat),
        ("ceilings", _ceilings),
        ("notebook sessions", _notebook_sessions),
    ]
    results = []
    for name, check in checks:
        if name in AS_SERVICE_ACCOUNT and os.geteuid() == 0:
            results.append(Result(name, SKIP, "doctor runs as root", "Run doctor as the service account (above)."))
            continue
        try:
            results.append(check())
        except Exception as error:  # a check that breaks is a failed check, with what broke it
            problem = f"the check itself failed: {type(error).__name__}: {error}"
            results.append(Result(name, FAIL, problem, "Read the error; the other checks may say more."))
    return results


def _account() -> Result:
    me = pwd.getpwuid(os.geteuid())
    if me.pw_uid == 0:
        return Result(
            "account",
            FAIL,
            "doctor runs as root; the web server and the worker must not, and what root may do proves nothing",
            "Run doctor as the service account the portal runs as, e.g. `sudo -u labqueue <venv>/bin/python "
            "manage.py doctor --user NETID`.",
        )
    return Result("account", OK, f"runs as {me.pw_name} (uid {me.pw_uid}, group {grp.getgrgid(os.getegid()).gr_name})")


def _database() -> Result:
    db = settings.DATABASES["default"]
    where = f"{db.get('HOST') or 'localhost'}:{db.get('PORT') or 'default port'}/{db.get('NAME')}"
    if db["ENGINE"] == "django.db.backends.postgresql":  # a host that does not answer: say so within seconds
        connection.settings_dict.setdefault("OPTIONS", {}).setdefault("connect_timeout", 5)
    try:
        connection.ensure_connection()
    except Exception as error:
        return Result(
            "database",
            FAIL,
            f"{where} could not be reached: {_first_line(error)}",
            "Check DATABASE_URL (host, port, database name, user, password), that PostgreSQL accepts connections "
            "from this host, and that the database exists (createdb -O <user> <name>).",
        )
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        names = ", ".join(f"{migration.app_label}.{migration.name}" for migration, _ in plan[:3])
        return Result(
            "database",
            FAIL,
            f"{where}: {len(plan)} migration(s) not applied ({names}{', ...' if len(plan) > 3 else ''})",
            'Run `manage.py migrate` (during an upgrade: with the worker and beat stopped, README "Upgrades").',
        )
    return Result("database", OK, f"{where} answers; every migration is applied")


def _broker() -> Result:
    where = re.sub(r"//[^@/]*@", "//", settings.CELERY_BROKER_URL)  # no password in the output
    try:
        with app.connection_for_write() as broker:
            broker.ensure_connection(max_retries=1, timeout=2)
    except Exception as error:
        return Result(
            "broker",
            FAIL,
            f"{where} did not answer: {_first_line(error)}",
            "Start Redis, or correct LABQUEUE_REDIS_URL; the web server, the worker and beat must all use the same.",
        )
    return Result("broker", OK, f"{where} answers")


def _slurm_versions() -> Result:
    name = "slurm versions"
    try:
        config = runner.run(["scontrol", "show", "config"], timeout=15)
    except slurm.SlurmError as error:
        return Result(
            name,
            FAIL,
            f"the controller did not answer `scontrol show config`: {error}",
            "Start slurmctld, or check SLURM_CONF and LABQUEUE_SLURM_BIN_DIR, and that munge works (below).",
        )
    found = re.search(r"^SLURM_VERSION\s*=\s*(\S+)", config, re.MULTILINE)
    if not found:
        return Result(name, FAIL, "`scontrol show config` printed no SLURM_VERSION", "Check the Slurm installation.")
    controller = found.group(1)
    problems = []
    for tool in SLURM_TOOLS:
        try:
            client = _version(runner.run([tool, "--version"], timeout=15))
        except slurm.SlurmError as error:
            problems.append(f"{tool}: {error}")
            continue
        problem = slurm_version_problem(client=client, controller=controller)
        if problem:
            problems.append(f"{tool} {client}: {problem}")
    if problems:
        return Result(
            name,
            FAIL,
            f"controller {controller}; " + "; ".join(problems),
            f"Install the Slurm client tools of the controller's release ({controller}) on this host (in the image: "
            "the site's own Slurm packages), or point LABQUEUE_SLURM_BIN_DIR at them.",
        )
    return Result(name, OK, f"clients and controller run Slurm {controller}")


def _other_clusters() -> Result:
    """Each of LABQUEUE_SLURM_OTHER_CLUSTERS is a cluster of this slurmdbd whose controller answers `-M`."""
    name = "other clusters"
    wanted = settings.LABQUEUE_SLURM_OTHER_CLUSTERS
    if not wanted:
        return Result(name, OK, "one cluster: LABQUEUE_SLURM_OTHER_CLUSTERS is empty")
    try:
        known = set(runner.run(["sacctmgr", "-n", "-P", "show", "cluster", "format=cluster"], timeout=15).split())
    except slurm.SlurmError as error:
        return Result(name, FAIL, f"slurmdbd did not list its clusters: {error}", "Fix slurmdbd (see munge above).")
    problems = []
    for cluster in wanted:
        if cluster not in known:
            problems.append(f"{cluster}: not a cluster of this slurmdbd (it knows {', '.join(sorted(known))})")
            continue
        try:
            runner.run(["squeue", "-M", cluster, "-h", "-o", "%i"], timeout=15)
        except slurm.SlurmError as error:
            problems.append(f"{cluster}: its controller does not answer ({_first_line(error)})")
    if problems:
        return Result(
            name,
            FAIL,
            "; ".join(problems),
            "Correct LABQUEUE_SLURM_OTHER_CLUSTERS (ClusterName of each cluster, `sacctmgr show cluster`), or start "
            "that cluster's slurmctld; its courses' jobs wait until it answers.",
        )
    return Result(name, OK, f"{', '.join(wanted)} answer through slurmdbd (-M)")


def _version(text: str) -> str:
    found = re.search(r"(\d+\.\d+\.\d+)", text)
    return found.group(1) if found else text.strip()


def slurm_version_problem(*, client: str, controller: str) -> str:
    """Why a client of this Slurm version cannot work with this controller ("" when it can)."""
    client_major, controller_major = client[:5], controller[:5]
    if client_major == controller_major:
        return ""
    if client_major not in SLURM_MAJORS or controller_major not in SLURM_MAJORS:
        return f"doctor cannot tell whether {client_major} clients work with a {controller_major} controller"
    behind = SLURM_MAJORS.index(controller_major) - SLURM_MAJORS.index(client_major)
    if behind < 0:
        return "newer than the controller, which Slurm does not support"
    allowed = 3 if controller_major >= "24.11" else 2
    if behind > allowed:
        return f"{behind} major releases older than the controller, which supports clients up to {allowed} older"
    return ""


def _munge() -> Result:
    path = runner.BASE_ENV["PATH"]
    munge, unmunge = shutil.which("munge", path=path), shutil.which("unmunge", path=path)
    if not munge or not unmunge:
        return Result("munge", FAIL, "munge and unmunge are not installed", "Install munge (apt install munge).")
    socket = ["--socket", settings.LABQUEUE_MUNGE_SOCKET] if settings.LABQUEUE_MUNGE_SOCKET else []
    try:
        credential = runner.run([munge, "-n", *socket], timeout=10)
        with tempfile.TemporaryFile() as handle:
            handle.write(credential.encode())
            handle.seek(0)
            decoded = runner.run([unmunge, *socket], stdin=handle, timeout=10)
    except slurm.SlurmError as error:
        return Result(
            "munge",
            FAIL,
            f"`munge -n | unmunge` failed: {error}",
            "Start munged (systemctl start munge) with the cluster's key; in a container mount the host's munge "
            "socket directory (/run/munge), not only /etc/munge, and set LABQUEUE_MUNGE_SOCKET if it is elsewhere.",
        )
    if "STATUS:" in decoded and "Success" not in decoded:
        return Result("munge", FAIL, decoded.strip().splitlines()[0], "Check munged's key and clock.")
    return Result("munge", OK, "a credential made here is decoded here")


def _helper() -> Result:
    name, helper = "job-dir helper", Path(settings.LABQUEUE_JOBDIR_HELPER)
    module = helper.with_name(HELPER_MODULE)
    install = (
        f"Install it root-owned: `install -o root -g root -m 0755 scripts/labqueue-jobdir {helper}`, "
        f"`install -o root -g root -m 0644 scripts/{HELPER_MODULE} {module}`, `/usr/bin/python3 -m py_compile {module}`"
    )
    for path in (helper, helper.parent, module, *_compiled(module)):
        try:
            item = path.stat()
        except OSError as error:
            return Result(name, FAIL, f"{path}: {error.strerror}", f"{install}, or set LABQUEUE_JOBDIR_HELPER.")
        if path == helper and (not stat.S_ISREG(item.st_mode) or not item.st_mode & 0o111):
            return Result(name, FAIL, f"{helper} is not an executable file", f"{install}.")
        if item.st_uid != 0 or item.st_mode & 0o022:
            return Result(
                name,
                FAIL,
                f"{path} is owned by uid {item.st_uid} with mode {stat.filemode(item.st_mode)}: an account other than "
                "root could change what runs as every student",
                f"{install}, in a directory only root may write to.",
            )
    source = module.stat()
    if not any(_compiled_from(pyc, source) for pyc in _compiled(module)):
        return Result(
            name,
            WARN,
            f"{module} has no current compiled file: the helper compiles it on every run (about 5 ms of CPU per job)",
            f"Compile it as root: `/usr/bin/python3 -m py_compile {module}`.",
        )
    return Result(name, OK, f"{helper} and {module}, compiled, are root-owned and only root may change them")


def _compiled(module: Path) -> list[Path]:
    """The module's __pycache__ folder and its compiled files there (for any Python), when it has them."""
    cache = module.with_name("__pycache__")
    return [cache, *sorted(cache.glob(f"{module.stem}.*.pyc"))] if cache.is_dir() else []


def _compiled_from(pyc: Path, source: os.stat_result) -> bool:
    """Whether Python would use this compiled file for the source as it is now: a timestamp-checked .pyc whose
    header (PEP 552: flags, then the source's mtime and size) matches the source."""
    try:
        with pyc.open("rb") as compiled:
            header = compiled.read(16)[4:]
    except OSError:
        return False
    flags, mtime, size = (int.from_bytes(header[i : i + 4], "little") for i in (0, 4, 8))
    return flags == 0 and mtime == int(source.st_mtime) & 0xFFFFFFFF and size == source.st_size & 0xFFFFFFFF


def _job_root() -> Result:
    root = Path(settings.LABQUEUE_JOB_ROOT)
    group = grp.getgrgid(os.getegid()).gr_name
    fix = f'`install -d -o root -g {group} -m 2751 {root}`, then `chmod 2751 {root}` (README "Privilege model").'
    try:
        info = root.stat()
    except OSError as error:
        return Result("job root", FAIL, f"{root}: {error.strerror}", f"Create it: {fix}")
    mode = stat.S_IMODE(info.st_mode)
    owner = f"{_user_name(info.st_uid)}:{_group_name(info.st_gid)}"
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_gid != os.getegid() or mode != JOB_ROOT_MODE:
        return Result(
            "job root",
            FAIL,
            f"{root} is {owner} mode {mode:04o}; it must be root:{group} mode 2751 (only root writes in it: the "
            f"helper's `provision` makes each student's folder, the portal's group reads them, nobody else lists it)",
            fix,
        )
    return Result("job root", OK, f"{root} is root:{group} mode 2751")


def _run_as(user: str | None) -> Result:
    if not user:
        return _needs_user("run-as")
    refusal = _user_refusal(user)
    if refusal:
        return Result(
            "run-as", FAIL, refusal, "Give --user a student's cluster account (a member of the students group)."
        )
    try:  # sbatch runs as the student only through the helper's `submit`: the job-files check tries that
        runner.run(["scancel", "--version"], run_as=user, timeout=15)
    except slurm.SlurmError as error:
        prefix = settings.SLURM_RUN_AS_PREFIX.replace("{user}", user)
        return Result(
            "run-as",
            FAIL,
            f"`{prefix} scancel --version` failed: {error}",
            "Install deploy/sudoers.labqueue as /etc/sudoers.d/labqueue (check with `visudo -cf`), put the student "
            "in its group, and set LABQUEUE_SLURM_RUN_AS_PREFIX to what the rule allows (`sudo -n -u {user}`).",
        )
    return Result("run-as", OK, f"scancel runs as {user} (sbatch only through the helper: job files, below)")


def _job_files(user: str | None) -> Result:
    if not user:
        return _needs_user("job files")
    refusal = _user_refusal(user)
    if refusal:
        return Result("job files", FAIL, refusal, "Give --user a student's cluster account.")
    workdir = job_workdir(netid=user, job_uuid=PROBE_JOB_UUID)
    try:
        workdir_probe(workdir=str(workdir), netid=user, script="# written by manage.py doctor\n")
    except (WorkdirError, WorkdirUnavailable) as error:
        return Result(
            "job files",
            FAIL,
            f"the helper could not make {workdir} as {user}: {error}",
            "Fix the job root, the helper and run-as first (above).",
        )
    try:
        (workdir / SCRIPT_NAME).read_text()
    except OSError as error:
        return Result(
            "job files",
            FAIL,
            f"the portal's account cannot read {workdir / SCRIPT_NAME}, written by {user}: {error.strerror}",
            "The job root's group must be the portal's service account's group, with the set-group-ID bit "
            "(mode 2751), so every job directory belongs to that group; on NFS, root_squash must not hide it.",
        )
    closed = _closed_to_others(workdir)
    if closed:
        return Result(
            "job files", FAIL, closed, "Install scripts/labqueue-jobdir as shipped (it makes job directories 2750)."
        )
    return Result(
        "job files",
        OK,
        f"{workdir}, made by the helper as {user}: the portal reads it but cannot write to it, other accounts cannot",
    )


def _closed_to_others(workdir: Path) -> str:
    """Why the job directory is more open than it should be ("" when it is not)."""
    mode = stat.S_IMODE(workdir.stat().st_mode)
    if mode & 0o007:
        return f"{workdir} has mode {mode:04o}: other accounts, other students included, can enter it"
    try:
        probe = os.open(workdir / "doctor-write-probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except PermissionError:
        return ""
    os.close(probe)
    os.unlink(workdir / "doctor-write-probe")
    return f"the portal's account can write into {workdir}: a bug in the portal could change a student's results"


def _static_files() -> Result:
    root = Path(settings.STATIC_ROOT)
    backend = settings.STORAGES["staticfiles"]["BACKEND"]
    wanted = root / ("staticfiles.json" if "Manifest" in backend else "labqueue.css")
    if not wanted.is_file() and settings.DEBUG:
        return Result(
            "static files",
            OK,
            f"{wanted} is missing, but LABQUEUE_DEBUG=1 serves the static files from the code itself "
            "(collect them before turning debug off)",
        )
    if not wanted.is_file():
        return Result(
            "static files",
            FAIL,
            f"{wanted} is missing: pages would have no style",
            "Run `manage.py collectstatic --noinput` with the same LABQUEUE_STATIC_ROOT as the web server.",
        )
    return Result("static files", OK, f"{wanted} is there")


def _beat() -> Result:
    period = job_sync_period()
    try:
        last = job_sync_last()
    except DatabaseError as error:
        return Result("beat", FAIL, f"the heartbeats cannot be read: {_first_line(error)}", "Fix the database (above).")
    fix = (
        "Start exactly one Celery beat (`celery -A portal beat`) and at least one worker; their logs say why "
        "the job-status sync does not finish."
    )
    if last is None:
        return Result("beat", FAIL, "the job-status sync has never finished", fix)
    age = (timezone.now() - last).total_seconds()
    if age > late_after(period):
        return Result(
            "beat", FAIL, f"the job-status sync last finished {age:.0f} s ago; it runs every {period:g} s", fix
        )
    return Result("beat", OK, f"the job-status sync finished {age:.0f} s ago (every {period:g} s)")


def _ceilings() -> Result:
    """The site's ceilings on course policies: each one this site chose, none missing (0)."""
    unbounded = [
        name
        for name in ("LABQUEUE_CEILING_JOBS_PER_STUDENT", "LABQUEUE_CEILING_GPU_HOURS_PER_STUDENT")
        + ("LABQUEUE_CEILING_GPUS_PER_COURSE",)
        if not getattr(settings, name)
    ]
    defaulted = [name for name in settings.LABQUEUE_CEILINGS_DEFAULTED if name not in unbounded]
    if not unbounded and not defaulted:
        return Result("ceilings", OK, "every ceiling on course policies (LABQUEUE_CEILING_*) is set for this site")
    problems = []
    if unbounded:
        problems.append(
            f"no ceiling on {', '.join(unbounded)} (0): an instructor may set any number there, up to 32767 GPUs "
            "or 2 billion GPU-hours, and Slurm gets it"
        )
    if defaulted:
        shipped = ", ".join(f"{name}={getattr(settings, name)}" for name in defaulted)
        problems.append(f"{shipped} left to the shipped default, not chosen for this cluster")
    fix = (
        "Set each LABQUEUE_CEILING_* in the portal's environment to the most one course may have on this cluster "
        "(.env.example; a course's own ceiling: Django admin, Course ceilings)."
    )
    return Result("ceilings", WARN, "; ".join(problems), fix)


def _notebook_sessions() -> Result:
    """Interactive assignments need the proxy's shared secret (and, usually, a set-up line for jupyter)."""
    interactive = Assignment.objects.filter(interactive=True).count()
    secret = settings.LABQUEUE_INTERACTIVE_PROXY_SECRET
    if not secret:
        if not interactive:
            return Result("notebook sessions", OK, "off: no assignment is interactive and no proxy secret is set")
        return Result(
            "notebook sessions",
            FAIL,
            f"{interactive} assignment(s) are interactive, but LABQUEUE_INTERACTIVE_PROXY_SECRET is empty, so no "
            "session ever opens (the portal refuses every proxy request)",
            "Set LABQUEUE_INTERACTIVE_PROXY_SECRET to a long random value in the portal's environment and the same in "
            "nginx's (deploy/nginx/labqueue.conf.template; README, interactive sessions).",
        )
    if len(secret) < 32:
        return Result(
            "notebook sessions",
            FAIL,
            f"LABQUEUE_INTERACTIVE_PROXY_SECRET has {len(secret)} characters: short enough to guess",
            "Use at least 32 random characters, e.g. `python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`.",
        )
    if not settings.LABQUEUE_INTERACTIVE_SETUP:
        return Result(
            "notebook sessions",
            WARN,
            "LABQUEUE_INTERACTIVE_SETUP is empty: sessions start only where `jupyter` is on the jobs' default PATH",
            "Set it to the line that makes JupyterLab available on the nodes, e.g. `module load jupyterlab`.",
        )
    return Result("notebook sessions", OK, f"on ({interactive} interactive assignment(s)); set-up line set")


def _needs_user(name: str) -> Result:
    return Result(name, SKIP, "no test user given", "Run `manage.py doctor --user NETID` with a student's account.")


def _user_refusal(user: str) -> str:
    refusal = netid_refusal(user)
    if refusal:
        return refusal
    try:
        pwd.getpwnam(user)
    except KeyError:
        return f"there is no account named {user!r} on this host"
    return ""


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
