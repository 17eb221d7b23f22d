"""gunicorn's configuration for the LabQueue web server, read from the environment.

    gunicorn --config deploy/gunicorn.conf.py portal.wsgi:application

The image's `deploy/entrypoint web` and deploy/systemd/labqueue-web.service both start it this way.
Its log lines are the portal's (portal/logs.py, LABQUEUE_LOG_FORMAT, LABQUEUE_LOG_LEVEL): gunicorn's own
messages and one access line per request, on standard error, each a JSON object with time, level, logger
and message, and the access line with the request id (the X-Request-ID the portal answered with, the same id
as the request's own log lines), method, path, status, bytes, duration_ms and client. Django is not set up
here: only portal.logs' formatter and filter classes are imported, when gunicorn configures its logging.
"""

import logging
import os
import sys

# gunicorn reads this file with the code's directory (the one above deploy/) on sys.path only once it loads
# the application; the log formatter is needed before that.
CODE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if CODE not in sys.path:
    sys.path.insert(0, CODE)


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise SystemExit(f"{name} must be a whole number, not {value!r}") from None


# Where to listen: host:port, or unix:/run/labqueue/web.sock behind a proxy on the same host.
bind = [os.environ.get("LABQUEUE_WEB_BIND", "0.0.0.0:8000")]
# Processes, and threads in each: a class clicking at once is served by workers x threads requests.
workers = _env_int("LABQUEUE_WEB_WORKERS", 3)
threads = _env_int("LABQUEUE_WEB_THREADS", 4)
# A request taking longer than this many seconds has its worker restarted (downloads of large zips included).
timeout = _env_int("LABQUEUE_WEB_TIMEOUT", 60)
graceful_timeout = timeout
# Seconds an idle keep-alive connection stays open. Behind a proxy that keeps upstream connections, make it
# longer than the proxy's idle timeout for them: otherwise gunicorn may close a connection just as the proxy
# sends the next request on it, and that request fails (a 502 to the person).
keepalive = _env_int("LABQUEUE_WEB_KEEPALIVE", 5)
# Which proxies may set X-Forwarded-For / X-Forwarded-Proto (comma-separated addresses, or * when only the
# proxy can reach the port). Django itself trusts X-Forwarded-Proto only with LABQUEUE_BEHIND_TLS_PROXY=1.
forwarded_allow_ips = os.environ.get("LABQUEUE_WEB_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")


class AccessFields(logging.Filter):
    """Puts an access line's parts on the record as fields of their own (gunicorn passes them as the message's
    arguments), the request id taken from the response's X-Request-ID (portal.logs.RequestIdMiddleware)."""

    def filter(self, record: logging.LogRecord) -> bool:
        atoms = record.args if isinstance(record.args, dict) else {}
        if atoms:
            request_id = atoms.get("{x-request-id}o", "-")
            record.request_id = None if request_id == "-" else request_id
            record.method = atoms.get("m")
            record.path = atoms.get("U")
            record.status = int(atoms["s"]) if str(atoms.get("s", "")).isdigit() else atoms.get("s")
            record.bytes = atoms.get("B")
            record.duration_ms = atoms.get("M")
            record.client = atoms.get("h")
        return True


def _log_format() -> str:
    chosen = os.environ.get("LABQUEUE_LOG_FORMAT", "").strip()
    if chosen:
        return chosen
    demo = os.environ.get("LABQUEUE_DEMO", "").strip().lower() in ("1", "true", "yes", "on")
    return "text" if demo else "json"


# Access and error logs on standard error, as the portal's own: journald or the container runtime keeps them.
# The message reads as the combined log format does; the fields above carry the same for a log search.
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms "%(a)s"'
loglevel = os.environ.get("LABQUEUE_LOG_LEVEL", "INFO").lower()
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "portal.logs.ContextFilter"}, "access": {"()": AccessFields}},
    "formatters": {
        "json": {"()": "portal.logs.JsonLinesFormatter"},
        "text": {"()": "portal.logs.TextFormatter"},
    },
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": _log_format(),
            "filters": ["context"],
            "stream": "ext://sys.stderr",
        },
    },
    "root": {"handlers": ["stderr"], "level": loglevel.upper()},
    "loggers": {
        "gunicorn.error": {"handlers": ["stderr"], "level": loglevel.upper(), "propagate": False},
        "gunicorn.access": {"handlers": ["stderr"], "filters": ["access"], "level": "INFO", "propagate": False},
    },
}
# Worker heartbeats in memory rather than on a disk that may be slow or read-only (containers, ProtectSystem).
if os.path.isdir("/dev/shm"):
    worker_tmp_dir = "/dev/shm"
# No control socket: it would live in the service account's home, shared by every web server of the account
# (two would fight over it) and read-only under the systemd unit's ProtectSystem; systemd or the container
# runtime already stops, restarts and reloads gunicorn with signals.
control_socket_disable = True
