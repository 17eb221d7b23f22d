"""The Celery application: Redis broker, tasks discovered in each app's tasks.py."""

import os

from celery import Celery
from celery.signals import setup_logging

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
