"""A client for the broker's Redis database, for what the portal counts there beside Celery (request metrics,
API rate limits): one per URL and process, since redis-py pools its connections. Short timeouts, so a Redis that
does not answer slows no request for long."""

import threading

import redis
from django.conf import settings

_clients: dict[str, redis.Redis] = {}
_clients_lock = threading.Lock()


def broker_redis() -> redis.Redis:
    url = settings.CELERY_BROKER_URL
    with _clients_lock:
        if url not in _clients:
            _clients[url] = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=1.0)
        return _clients[url]
