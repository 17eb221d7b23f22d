"""Interactive notebook sessions: the launcher a session's job runs, and what the worker learns of each session.

A session is an ordinary job (the same limits, budget, lab reservation and accounting) whose script ends with the
portal's launcher: it starts JupyterLab on the node, on a free port, under the base URL `/interactive/<job
uuid>/`, with a random token, and writes where it listens into SESSION_FILE_NAME in the job's folder (readable by
the student and the portal's group only, like every job file). The browser reaches the server only through the
nginx proxy, whose auth check (jobs.session_views) reads the InteractiveSession row the worker filled in here.

After each status sync the worker (sessions_follow) reads the file of each running session whose server it has
not found yet and asks that server for its status; only an answer from a notebook server under the job's own base
URL, with the token, makes the session open (so a student who writes another address into the file points the
proxy at nothing). It asks open servers for their last activity once a minute and stops (scancel, as the student)
a session idle longer than LABQUEUE_INTERACTIVE_IDLE_MINUTES. None of this is a Slurm command except that scancel.
"""

import ipaddress
import json
import logging
import re
import urllib.error
import urllib.request
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from courses.scripting import SESSION_FILE_NAME
from jobs.enqueue import job_scancel_enqueue
from jobs.files import UnsafePath, read_head
from jobs.models import InteractiveSession, Job, JobEvent, Status

log = logging.getLogger(__name__)

#: How long the worker waits for a notebook server's answer.
PROBE_TIMEOUT_SECONDS = 3
#: How often the worker asks an open session's server for its last activity.
ACTIVITY_CHECK_EVERY = timedelta(seconds=60)
#: Minutes before the end of a session from which its page tells the student to save their work.
ENDING_SOON_MINUTES = 5
_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{16,128}")
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))

NO_JUPYTER_EXIT = 3
LAUNCHER = """\
# An interactive JupyterLab session, reached only through the portal at {base_url}
umask 027
{setup}
if ! command -v jupyter >/dev/null 2>&1; then
    echo "LabQueue: JupyterLab is not available on $(hostname): there is no 'jupyter' command after the set-up \\
line LABQUEUE_INTERACTIVE_SETUP ({setup_shown}). An operator sets it to what makes JupyterLab available on \\
the nodes, for example 'module load jupyterlab'." >&2
    exit {no_jupyter_exit}
fi
labqueue_python=$(command -v python3)
JUPYTER_TOKEN=$("$labqueue_python" -c 'import secrets; print(secrets.token_urlsafe(32))')
export JUPYTER_TOKEN
labqueue_port=$("$labqueue_python" -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')
labqueue_address=$(hostname -I 2>/dev/null | awk '{{print $1}}')
labqueue_address=${{labqueue_address:-127.0.0.1}}
export JUPYTER_RUNTIME_DIR="${{TMPDIR:-/tmp}}/labqueue-jupyter-${{SLURM_JOB_ID:-$$}}"
printf '{{"host": "%s", "port": %s, "token": "%s"}}\\n' "$labqueue_address" "$labqueue_port" "$JUPYTER_TOKEN" \\
    > {session_file}.new
mv -f {session_file}.new {session_file}
trap 'rm -f {session_file}; rm -rf "$JUPYTER_RUNTIME_DIR"' EXIT
jupyter lab --no-browser --ip="$labqueue_address" --port="$labqueue_port" --port-retries=0 \\
    --ServerApp.base_url={base_url} --ServerApp.root_dir="$PWD" \\
    --ServerApp.allow_remote_access=True --ServerApp.quit_button=False
"""


def session_base_url(job_uuid) -> str:
    return f"/interactive/{job_uuid}/"


def session_launcher(*, job_uuid) -> str:
    """The script part that starts the notebook server of the job `job_uuid`, after the assignment's own script."""
    setup = settings.LABQUEUE_INTERACTIVE_SETUP
    return LAUNCHER.format(
        base_url=session_base_url(job_uuid),
        setup=setup or "# (no set-up line: LABQUEUE_INTERACTIVE_SETUP is empty)",
        setup_shown=(setup or "empty").replace('"', "'").replace("$", "").replace("`", "'"),
        session_file=SESSION_FILE_NAME,
        no_jupyter_exit=NO_JUPYTER_EXIT,
    )


def sessions_follow(*, now: datetime | None = None) -> None:
    """Find the servers of sessions that started, and stop idle ones (one HTTP request per session at most)."""
    now = now or timezone.now()
    running = InteractiveSession.objects.select_related("job").filter(job__status=Status.RUNNING)
    for session in running.filter(ready_at=None):
        _find_server(session, now=now)
    idle_minutes = settings.LABQUEUE_INTERACTIVE_IDLE_MINUTES
    if idle_minutes:
        due = running.exclude(ready_at=None).filter(checked_at__lte=now - ACTIVITY_CHECK_EVERY)
        for session in due.filter(job__cancel_requested=False):
            _check_activity(session, now=now, idle=timedelta(minutes=idle_minutes))


def _find_server(session: InteractiveSession, *, now: datetime) -> None:
    endpoint = _read_endpoint(session.job)
    if endpoint is None:
        return
    host, port, token = endpoint
    status = _server_status(session.job, host=host, port=port, token=token)
    if status is None:
        return
    session.host, session.port, session.token = host, port, token
    session.ready_at = session.checked_at = now
    session.last_activity_at = _activity(status) or now
    session.save(update_fields=["host", "port", "token", "ready_at", "checked_at", "last_activity_at"])
    log.info("Notebook session of job %s is open", session.job.uuid)


def _read_endpoint(job: Job) -> tuple[str, int, str] | None:
    """Where the job says its server listens, when it has said so in a form the portal accepts."""
    try:
        data, _size = read_head(job.workdir, SESSION_FILE_NAME, 4096, offered=False)
        endpoint = json.loads(data)
        host, port, token = str(ipaddress.ip_address(endpoint["host"])), endpoint["port"], endpoint["token"]
    except (UnsafePath, OSError, ValueError, TypeError, KeyError):
        return None  # not written yet, or not what the launcher writes
    if not isinstance(port, int) or not 1024 <= port <= 65535 or not isinstance(token, str):
        return None
    if not _TOKEN_RE.fullmatch(token):
        return None
    return host, port, token


def _server_status(job: Job, *, host: str, port: int, token: str) -> dict | None:
    """The notebook server's /api/status under the job's base URL, or None when no such server answers."""
    address = f"[{host}]" if ":" in host else host
    request = urllib.request.Request(
        f"http://{address}:{port}{session_base_url(job.uuid)}api/status",
        headers={"Authorization": f"token {token}"},
    )
    try:
        with _NO_PROXY.open(request, timeout=PROBE_TIMEOUT_SECONDS) as response:
            status = json.loads(response.read(65536))
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return status if isinstance(status, dict) and "last_activity" in status else None


def _activity(status: dict) -> datetime | None:
    try:
        return datetime.fromisoformat(str(status["last_activity"]).replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return None


def _check_activity(session: InteractiveSession, *, now: datetime, idle: timedelta) -> None:
    status = _server_status(session.job, host=session.host, port=session.port, token=session.token)
    last = _activity(status) if status else None
    session.checked_at = now
    if last is not None:
        session.last_activity_at = max(last, session.last_activity_at or last)
    session.save(update_fields=["checked_at", "last_activity_at"])
    if session.last_activity_at and now - session.last_activity_at > idle:
        _stop_idle(session, minutes=int(idle.total_seconds() // 60))


@transaction.atomic
def _stop_idle(session: InteractiveSession, *, minutes: int) -> None:
    """Cancel the session's job as its Stop button does (scancel as the student, on the submit queue)."""
    job = session.job
    if not Job.objects.filter(pk=job.pk, status=Status.RUNNING, cancel_requested=False).update(cancel_requested=True):
        return
    InteractiveSession.objects.filter(pk=session.pk).update(stopped_idle=True)
    JobEvent.objects.create(
        job=job, cause=f"Stopped by the portal: the notebook had no activity for {minutes} minutes."
    )
    transaction.on_commit(lambda: job_scancel_enqueue(job.pk))


def session_minutes_left(job: Job, *, now: datetime | None = None) -> int | None:
    """Whole minutes until the session's time limit (None before it started)."""
    if job.started_at is None:
        return None
    end = job.started_at + timedelta(minutes=job.minutes)
    return max(0, int(((end - (now or timezone.now())).total_seconds() + 59) // 60))


def session_context(job: Job, *, is_owner: bool) -> dict:
    """What the job page says about an interactive job's session (nothing for a batch job)."""
    if not job.assignment.interactive:
        return {}
    session = InteractiveSession.objects.select_related("job").filter(job=job).first()
    is_open = session is not None and session.is_open
    minutes_left = session_minutes_left(job) if is_open else None
    return {
        "session": session,
        "session_open": is_open,
        "session_may_open": is_open and (is_owner or job.assignment.course.staff_may_open_sessions),
        "session_url": session_base_url(job.uuid) + "lab",
        "session_minutes_left": minutes_left,
        "session_ending_soon": minutes_left is not None and minutes_left <= ENDING_SOON_MINUTES,
    }


def session_shown(job: Job) -> tuple:
    """What of the session the job page's live part shows, for its validator (jobs.live)."""
    context = session_context(job, is_owner=True)
    if not context:
        return ()
    session = context["session"]
    return (
        session.ready_at if session else None,
        session.stopped_idle if session else None,
        context["session_minutes_left"],
        job.assignment.course.staff_may_open_sessions,
    )
