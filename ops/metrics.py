"""Prometheus metrics at /metrics (prometheus-client's text format), for the site's monitoring.

Off unless LABQUEUE_METRICS_TOKEN (scrapers send ``Authorization: Bearer <token>``) or
LABQUEUE_METRICS_ALLOW (addresses and CIDR networks, compared with REMOTE_ADDR) is set: then /metrics
answers 404, as if it did not exist. A request that meets neither answers 403. The page names no person,
course or job.

Everything is read when the scraper asks, so any web process answers the same:

- jobs by status and the submissions total from PostgreSQL (one GROUP BY; every job row is a submission,
  retries included);
- how long ago the job-status sync, the usage ingest and the association reconciliation last finished, from the
  rows /readyz reads (ops/health.py); +Inf when one has never finished, so an alert on a threshold fires;
- the Celery queue length: LLEN of the default queue's list in the Redis broker;
- Slurm commands by tool, with their time and failures;
- HTTP requests by view, method and status, with their time (a histogram), counted by
  :class:`RequestMetricsMiddleware` in every web process.

Slurm commands run in the worker (and a few in the web processes) while /metrics is served by a web
process, so counts kept in one process's memory would be useless. The runner (slurm/runner.py) calls its
observers after every command, and :func:`command_observed`, registered when Django starts
(ops/apps.py), adds the command to one Redis hash in the broker's database: HINCRBY for the count and
the failures, HINCRBYFLOAT for the seconds, in one round trip. Redis rather than PostgreSQL because an
increment there costs no transaction and no row lock on a hot row in every sync cycle, and the broker is
already a dependency of every process. The counts live as long as that Redis database (a restart of a
Redis without persistence starts them at zero, which Prometheus' rate() treats as a counter reset). When
Redis does not answer, commands are not counted for half a minute rather than each waiting on it.

HTTP requests are counted the same way, in a second hash: gunicorn runs several processes, so
prometheus-client's own Counter and Histogram (one process's memory) would show a third of the requests,
and its multiprocess mode needs a directory shared by the web processes and wiped at each start, which
no unit or container here has. django-prometheus builds on the same two choices, so it is not used. One
pipeline of three increments per request (count, seconds, the latency bucket) costs well under a
millisecond on the local Redis.
"""

import hmac
import ipaddress
import logging
import math
import time

from django.conf import settings
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    SummaryMetricFamily,
)

from jobs.models import InteractiveSession, Job, Status
from ops.health import association_reconcile_last, job_sync_last, usage_ingest_last
from portal.broker import broker_redis
from slurm.runner import Command

logger = logging.getLogger(__name__)

#: The Redis hash (in the broker's database) holding "<tool>:count", "<tool>:failures", "<tool>:seconds".
COMMANDS_KEY = "labqueue:metrics:slurm_commands"
#: The Redis hash holding "<view> <method> <status> count|seconds|le<i>" for HTTP requests.
REQUESTS_KEY = "labqueue:metrics:http_requests"
#: The upper bounds (seconds) of the request latency histogram's buckets (+Inf added).
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: After Redis failed to answer, commands and requests are not counted for this long.
REDIS_BACKOFF_SECONDS = 30.0

_redis_down_until = 0.0


def _count(what: str, key: str, *, increments: dict[str, int], seconds: dict[str, float]) -> None:
    """Add to the fields of one hash in one round trip; while Redis does not answer, count nothing."""
    global _redis_down_until
    if time.monotonic() < _redis_down_until:
        return
    try:
        pipe = broker_redis().pipeline(transaction=False)
        for field, amount in increments.items():
            pipe.hincrby(key, field, amount)
        for field, amount in seconds.items():
            pipe.hincrbyfloat(key, field, amount)
        pipe.execute()
    except Exception as error:  # Redis down, or a broker URL Redis cannot use: this one is not counted
        _redis_down_until = time.monotonic() + REDIS_BACKOFF_SECONDS
        logger.warning("metrics: %s are not counted for %.0f s: %s", what, REDIS_BACKOFF_SECONDS, error)


def command_observed(command: Command) -> None:
    """Count one Slurm command (a runner observer): its tool, its time and whether it failed."""
    increments = {f"{command.tool}:count": 1}
    if command.returncode != 0:  # None: killed by the timeout or never started
        increments[f"{command.tool}:failures"] = 1
    _count("Slurm commands", COMMANDS_KEY, increments=increments, seconds={f"{command.tool}:seconds": command.seconds})


def request_observed(*, view: str, method: str, status: int, seconds: float) -> None:
    """Count one HTTP request: its view, method and status, its time and its latency bucket."""
    series = f"{view} {method} {status}"
    bucket = next((index for index, bound in enumerate(LATENCY_BUCKETS) if seconds <= bound), len(LATENCY_BUCKETS))
    increments = {f"{series} count": 1, f"{series} le{bucket}": 1}
    _count("HTTP requests", REQUESTS_KEY, increments=increments, seconds={f"{series} seconds": seconds})


class RequestMetricsMiddleware:
    """Times each request and counts it by view name (the URL pattern's name, so /jobs/<uuid>/ is one
    series), method and status. Static files answered by whitenoise are `static`; a path that matches no
    URL is `unmatched`, so a scan of random paths adds no series."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        method = request.method if request.method in ("GET", "HEAD", "POST") else "other"
        started = time.perf_counter()
        response = self.get_response(request)
        seconds = time.perf_counter() - started
        if request.resolver_match is not None:
            view = request.resolver_match.view_name
        elif request.path.startswith(settings.STATIC_URL or "/static/"):
            view = "static"
        else:
            view = "unmatched"
        request_observed(view=view, method=method, status=response.status_code, seconds=seconds)
        return response


class PortalCollector:
    """The portal's metrics, read from PostgreSQL and Redis at each scrape."""

    def collect(self):
        up = GaugeMetricFamily("labqueue_source_up", "Whether /metrics could read this source.", labels=["source"])
        try:
            yield from self._database()
            up.add_metric(["database"], 1)
        except Exception as error:  # a scrape that cannot read a source says so; it never answers 500
            logger.warning("metrics: the database could not be read: %s", error)
            up.add_metric(["database"], 0)
        try:
            yield from self._redis()
            up.add_metric(["redis"], 1)
        except Exception as error:
            logger.warning("metrics: Redis could not be read: %s", error)
            up.add_metric(["redis"], 0)
        yield up

    def _database(self):
        counts = dict(Job.objects.order_by().values_list("status").annotate(n=Count("id")))
        jobs = GaugeMetricFamily("labqueue_jobs", "Jobs in the portal by status.", labels=["status"])
        for status in Status.values:
            jobs.add_metric([status], counts.get(status, 0))
        submissions = CounterMetricFamily("labqueue_job_submissions", "Jobs submitted (retries included).")
        submissions.add_metric([], sum(counts.values()))
        yield jobs
        yield submissions
        open_sessions = InteractiveSession.objects.filter(job__status=Status.RUNNING).exclude(ready_at=None)
        yield GaugeMetricFamily(
            "labqueue_interactive_sessions_open",
            "Notebook sessions whose server is open to their student (jobs.sessions).",
            value=open_sessions.count(),
        )
        now = timezone.now()
        for name, help_text, last in (
            ("labqueue_job_sync_lag_seconds", "Seconds since the job-status sync last finished.", job_sync_last()),
            ("labqueue_usage_ingest_lag_seconds", "Seconds since usage was last ingested.", usage_ingest_last()),
            (
                "labqueue_association_reconcile_age_seconds",
                "Seconds since the association reconciliation last finished.",
                association_reconcile_last(),
            ),
        ):
            yield GaugeMetricFamily(name, help_text, value=(now - last).total_seconds() if last else math.inf)

    def _redis(self):
        pipe = broker_redis().pipeline(transaction=False)
        pipe.hgetall(COMMANDS_KEY)
        pipe.hgetall(REQUESTS_KEY)
        queues = list(getattr(settings, "CELERY_TASK_QUEUES", None) or ["celery"])
        for queue in queues:
            pipe.llen(queue)
        fields, requests, *lengths = pipe.execute()
        yield from _requests(requests)
        yield GaugeMetricFamily(
            "labqueue_celery_queue_length", "Tasks waiting in the Celery queues (all of them).", value=sum(lengths)
        )
        by_queue = GaugeMetricFamily(
            "labqueue_celery_queue_tasks", "Tasks waiting in each Celery queue.", labels=["queue"]
        )
        for queue, length in zip(queues, lengths, strict=True):
            by_queue.add_metric([queue], length)
        yield by_queue
        totals: dict[str, dict[str, float]] = {}
        for field, value in fields.items():
            tool, _, kind = field.decode().rpartition(":")
            totals.setdefault(tool, {})[kind] = float(value)
        seconds = SummaryMetricFamily(
            "labqueue_slurm_command_seconds", "Slurm commands run, by tool, and their time.", labels=["tool"]
        )
        failures = CounterMetricFamily(
            "labqueue_slurm_command_failures", "Slurm commands that failed or timed out, by tool.", labels=["tool"]
        )
        for tool, values in sorted(totals.items()):
            seconds.add_metric([tool], count_value=values.get("count", 0), sum_value=values.get("seconds", 0.0))
            failures.add_metric([tool], values.get("failures", 0))
        yield seconds
        yield failures


def _requests(fields: dict[bytes, bytes]):
    series: dict[tuple[str, str, str], dict[str, float]] = {}
    for field, value in fields.items():
        view, method, status, kind = field.decode().split(" ")
        series.setdefault((view, method, status), {})[kind] = float(value)
    total = CounterMetricFamily(
        "labqueue_http_requests",
        "HTTP requests answered, by view, method and status.",
        labels=["view", "method", "status"],
    )
    latency = HistogramMetricFamily(
        "labqueue_http_request_duration_seconds",
        "Time to answer HTTP requests, by view, method and status.",
        labels=["view", "method", "status"],
    )
    for labels, values in sorted(series.items()):
        count = values.get("count", 0)
        total.add_metric(list(labels), count)
        buckets, cumulative = [], 0.0
        for index, bound in enumerate(LATENCY_BUCKETS):
            cumulative += values.get(f"le{index}", 0)
            buckets.append((repr(bound), cumulative))
        buckets.append(("+Inf", count))
        latency.add_metric(list(labels), buckets, sum_value=values.get("seconds", 0.0))
    yield total
    yield latency


def _admitted(request: HttpRequest) -> bool:
    token = settings.LABQUEUE_METRICS_TOKEN
    if token:
        scheme, _, sent = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(sent.strip().encode(), token.encode()):
            return True
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(allowed, strict=False) for allowed in settings.LABQUEUE_METRICS_ALLOW)


@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    if not settings.LABQUEUE_METRICS_TOKEN and not settings.LABQUEUE_METRICS_ALLOW:
        return HttpResponse("Not found: metrics are off on this portal.\n", status=404, content_type="text/plain")
    if not _admitted(request):
        return HttpResponse(
            "Forbidden: /metrics needs the bearer token set in LABQUEUE_METRICS_TOKEN, "
            "or a client address listed in LABQUEUE_METRICS_ALLOW.\n",
            status=403,
            content_type="text/plain",
        )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PortalCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


urlpatterns = [
    path("metrics", metrics, name="metrics"),
]
