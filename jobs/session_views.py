"""The nginx proxy's questions about interactive sessions (deploy/nginx/labqueue.conf.template).

For every request under /interactive/<job uuid>/ nginx first asks `session_auth` (an `auth_request`
subrequest carrying the browser's cookies, its Origin and the original URI). The answer is 200 with where the
notebook server listens, its token and the Content-Security-Policy for its pages, in response headers that nginx
keeps to itself; or 403, which nginx turns into `session_closed`'s 404 page. Only the job's owner is admitted
(course staff too where the course allows it, each opening logged), only while the job runs and its server
answered the worker (jobs.sessions), and only from the portal's own pages (a WebSocket another site opens is
refused). The subrequest must carry LABQUEUE_INTERACTIVE_PROXY_SECRET, so a browser that reaches the web server
directly learns nothing here.
"""

import hmac
import logging
import re
from uuid import UUID

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from courses.models import STAFF_ROLES
from courses.selectors import course_role
from jobs.models import InteractiveSession, JobEvent, Status
from jobs.sessions import session_base_url

log = logging.getLogger(__name__)

_SESSION_PATH_RE = re.compile(r"^/interactive/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/")


def _refused() -> HttpResponse:
    return HttpResponse(status=403)


def _from_the_proxy(request: HttpRequest) -> bool:
    secret = settings.LABQUEUE_INTERACTIVE_PROXY_SECRET
    sent = request.headers.get("X-LabQueue-Proxy-Secret", "")
    return bool(secret) and hmac.compare_digest(sent.encode(), secret.encode())


def _same_origin(request: HttpRequest) -> bool:
    """No Origin (a plain page load) or the portal's own: a page of another site may not open a WebSocket
    (or send a request) to a session with the student's cookies."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    return origin == f"{request.scheme}://{request.get_host()}"


def _session_for(request: HttpRequest) -> InteractiveSession | None:
    match = _SESSION_PATH_RE.match(request.headers.get("X-Original-URI", ""))
    if match is None or not request.user.is_authenticated:
        return None
    session = (
        InteractiveSession.objects.select_related("job__assignment__course", "job__user")
        .filter(job__uuid=UUID(match.group(1)), job__status=Status.RUNNING)
        .exclude(ready_at=None)
        .first()
    )
    if session is None:
        return None
    job = session.job
    if job.user_id == request.user.pk:
        return session
    course = job.assignment.course
    if course.staff_may_open_sessions and course_role(user=request.user, course=course) in STAFF_ROLES:
        _log_staff_opening(session, request.user)
        return session
    return None


def _log_staff_opening(session: InteractiveSession, user) -> None:
    """One line in the job's history per staff member who opens the session (and one log line)."""
    cause = f"Notebook session opened by {user} (course staff)."
    if not JobEvent.objects.filter(job=session.job, actor=user, cause=cause).exists():
        JobEvent.objects.create(job=session.job, actor=user, cause=cause)
        log.info("Notebook session of job %s opened by course staff %s", session.job.uuid, user)


def _content_security_policy(request: HttpRequest, session: InteractiveSession) -> str:
    """What the session's pages may do in the browser: talk to their own server only (so a student's server
    cannot make a staff member's browser act on the rest of the portal), no pop-ups, no other site's frames."""
    base = session_base_url(session.job.uuid)
    host = request.get_host()
    http = f"{request.scheme}://{host}{base}"
    ws = f"{'wss' if request.is_secure() else 'ws'}://{host}{base}"
    return (
        f"default-src {http}; script-src {http} 'unsafe-inline' 'unsafe-eval'; style-src {http} 'unsafe-inline'; "
        f"img-src {http} data: blob:; font-src {http} data:; connect-src {http} {ws}; "
        f"frame-src {http} blob:; worker-src {http} blob:; form-action {http}; frame-ancestors 'self'; "
        "base-uri 'none'; object-src 'none'; "
        "sandbox allow-scripts allow-same-origin allow-forms allow-modals allow-downloads"
    )


@never_cache
def session_auth(request: HttpRequest) -> HttpResponse:
    """nginx's auth_request: 200 with the upstream, token and CSP in headers for nginx alone, or 403."""
    if not _from_the_proxy(request) or not _same_origin(request):
        return _refused()
    session = _session_for(request)
    if session is None:
        return _refused()
    response = HttpResponse(status=200)
    host = f"[{session.host}]" if ":" in session.host else session.host
    response["X-LabQueue-Upstream"] = f"{host}:{session.port}"
    response["X-LabQueue-Token"] = session.token
    response["X-LabQueue-CSP"] = _content_security_policy(request, session)
    return response


@never_cache
def session_closed(request: HttpRequest, path: str = "") -> HttpResponse:
    """What a browser gets at /interactive/... when the proxy refused it, or when it reached the web server
    without the proxy: a 404 that says why in words (it is not theirs, or not open)."""
    return render(request, "jobs/session_closed.html", status=404)
