"""gunicorn's configuration for the LabQueue web server, read from the environment.

    gunicorn --config deploy/gunicorn.conf.py portal.wsgi:application

The image's `deploy/entrypoint web` and deploy/systemd/labqueue-web.service both start it this way.
Standard library only: gunicorn reads this file before Django is loaded.
"""

import os


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
# Access and error logs on standard output and error: journald or the container runtime keeps them.
accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("LABQUEUE_LOG_LEVEL", "INFO").lower()
# Worker heartbeats in memory rather than on a disk that may be slow or read-only (containers, ProtectSystem).
if os.path.isdir("/dev/shm"):
    worker_tmp_dir = "/dev/shm"
# No control socket: it would live in the service account's home, shared by every web server of the account
# (two would fight over it) and read-only under the systemd unit's ProtectSystem; systemd or the container
# runtime already stops, restarts and reloads gunicorn with signals.
control_socket_disable = True
