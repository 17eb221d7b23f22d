"""Local passwords on for one test, as the demo or LABQUEUE_LOCAL_PASSWORDS=1 has them.

allauth decides when its URLconf is first imported which password views exist (SOCIALACCOUNT_ONLY,
which the settings derive from LABQUEUE_LOCAL_PASSWORDS): in a running test process, turning local
passwords on means loading those URL modules again, and again once the test is over.
"""

import importlib

import pytest
from django.conf import settings
from django.test import override_settings
from django.urls import clear_url_caches


def _reload_urls() -> None:
    for name in ("allauth.account.urls", "allauth.urls", settings.ROOT_URLCONF):
        importlib.reload(importlib.import_module(name))
    clear_url_caches()


@pytest.fixture
def local_passwords_on():
    with override_settings(SOCIALACCOUNT_ONLY=False):
        _reload_urls()
        yield
    _reload_urls()
