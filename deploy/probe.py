"""Ask the web server on this host for a health path, as a container or load-balancer health check does.

    python3 deploy/probe.py /healthz                    # exit 0 when it answers 200, 1 otherwise (why on stderr)
    python3 deploy/probe.py --server web:8000 /readyz   # another host's web server (compose's worker)

It talks to LABQUEUE_WEB_BIND (a TCP address; 0.0.0.0 means this host), or to --server, and says what a request through
the site's proxy would: the first of LABQUEUE_ALLOWED_HOSTS as Host, and, behind a TLS proxy
(LABQUEUE_BEHIND_TLS_PROXY=1), X-Forwarded-Proto: https, so LABQUEUE_SECURE's redirect to HTTPS and the
host check answer as they do for people. Standard library only (no Django), so it is cheap to run often.
"""

import http.client
import os
import sys

TRUE = {"1", "true", "yes", "on"}


def probe(path: str, server: str = "", timeout: float = 5) -> tuple[int, str]:
    bind = server or os.environ.get("LABQUEUE_WEB_BIND", "0.0.0.0:8000")
    if bind.startswith(("unix:", "fd://")):
        raise SystemExit(f"probe: LABQUEUE_WEB_BIND={bind} is not a TCP address; probe through the proxy instead")
    host, _, port = bind.rpartition(":")
    host = host.strip("[]")
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    allowed = [name.strip() for name in os.environ.get("LABQUEUE_ALLOWED_HOSTS", "localhost").split(",")]
    server_name = next((name.lstrip(".") for name in allowed if name and name != "*"), "localhost")
    headers = {"Host": server_name}
    if os.environ.get("LABQUEUE_BEHIND_TLS_PROXY", "").strip().lower() in TRUE:
        headers["X-Forwarded-Proto"] = "https"
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, response.read(4096).decode("utf-8", "replace")
    finally:
        connection.close()


def main(argv: list[str]) -> int:
    server = ""
    if len(argv) == 3 and argv[0] == "--server":
        server, argv = argv[1], argv[2:]
    if len(argv) != 1 or not argv[0].startswith("/"):
        print("usage: probe.py [--server HOST:PORT] /healthz | /readyz", file=sys.stderr)
        return 2
    try:
        status, body = probe(argv[0], server)
    except OSError as error:
        print(f"probe: the web server did not answer {argv[0]}: {error}", file=sys.stderr)
        return 1
    if status != 200:
        print(f"probe: {argv[0]} answered HTTP {status}: {body}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
