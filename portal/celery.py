"""The Celery application: Redis broker, tasks discovered in each app's tasks.py."""

import os

from celery import Celery
from celery.signals import after_task_publish, setup_logging, task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("labqueue")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@setup_logging.connect
def _logging_from_settings(**kwargs) -> None:
    """Worker and beat log exactly as the web server does (settings.LOGGING): with a receiver here Celery
    leaves the root logger alone instead of putting its own format on it."""
    import logging
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)
    logging.captureWarnings(True)  # Celery's start-up warnings too: one format for every line


@after_task_publish.connect
def _broker_reached(**kwargs) -> None:
    """A message went through the broker (beat's schedule, a task enqueued): a broker outage this process
    logged is over, and the log says so once (portal.logs.BrokerOutageFilter)."""
    from portal.logs import broker_reached

    broker_reached()


@task_prerun.connect
def _database_connections_checked(task=None, **kwargs) -> None:
    """Before each task in a worker: close a kept connection that errored or outlived CONN_MAX_AGE, and have
    the others checked before their first query (CELERY_DB_REUSE_MAX keeps them between tasks). A task run
    eagerly (tests, LABQUEUE_CELERY_EAGER) shares its caller's connection and transaction: left alone."""
    from django.db import close_old_connections

    if not _eager(task):
        close_old_connections()


@task_postrun.connect
def _database_connections_closed_after_failure(task=None, state=None, **kwargs) -> None:
    """After a task in a worker that did not succeed (it raised, was retried, or hit its time limit): close
    the connections, as Celery does after every task by default, so no half-used connection reaches the next."""
    if state != "SUCCESS" and not _eager(task):
        from django.db import connections

        connections.close_all()


def _eager(task) -> bool:
    return task is None or bool(getattr(task.request, "is_eager", False))
