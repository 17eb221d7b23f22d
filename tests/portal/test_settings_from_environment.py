"""A setting the portal cannot use stops the start with an error naming the variable, before anything runs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def manage_check(**values: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "LABQUEUE_SECRET_KEY": "a-test-only-secret-key", **values}
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [
        ("LABQUEUE_SYNC_SECONDS", "5  # how often", "LABQUEUE_SYNC_SECONDS: not a valid integer ('5  # how often')"),
        ("EMAIL_PORT", "smtp", "EMAIL_PORT: not a valid integer ('smtp')"),
        ("LABQUEUE_SECURE", "maybe", "LABQUEUE_SECURE: not a valid boolean ('maybe')"),
        ("LABQUEUE_LOG_FORMAT", "xml", "LABQUEUE_LOG_FORMAT: must be 'json' or 'text' ('xml')"),
    ],
)
def test_a_value_the_setting_cannot_use_stops_the_start_naming_the_variable(name, value, error):
    run = manage_check(**{name: value})

    assert run.returncode != 0
    assert f"django.core.exceptions.ImproperlyConfigured: {error}" in run.stderr


def test_a_bad_json_setting_is_named_without_repeating_its_value_which_may_hold_a_secret():
    run = manage_check(LABQUEUE_OIDC_PROVIDERS='[{"id": "campus", "secret": "s3cr3t-value"')

    assert run.returncode != 0
    assert "ImproperlyConfigured: LABQUEUE_OIDC_PROVIDERS: not valid JSON" in run.stderr
    assert "s3cr3t-value" not in run.stderr


def test_both_kinds_of_smtp_encryption_at_once_stop_the_start():
    run = manage_check(EMAIL_USE_TLS="1", EMAIL_USE_SSL="1")

    assert run.returncode != 0
    assert "EMAIL_USE_TLS and EMAIL_USE_SSL: set one of them, not both." in run.stderr


def test_good_values_of_every_kind_start_and_empty_means_the_default():
    run = manage_check(
        LABQUEUE_SYNC_SECONDS="7",
        LABQUEUE_SECURE="off",
        LABQUEUE_DEBUG="",
        EMAIL_PORT="",
        LABQUEUE_GROUP_ROLES="",
        LABQUEUE_ALLOWED_PARTITIONS=" gpu , cpu ,",
    )

    assert run.returncode == 0, run.stderr


def test_with_a_sentry_dsn_the_portal_reports_errors_to_it_without_personal_data():
    program = (
        "import django; django.setup()\n"
        "import sentry_sdk\n"
        "client = sentry_sdk.get_client()\n"
        "print(client.is_active(), client.options['send_default_pii'], client.options['release'])\n"
        "print(sorted(client.integrations))\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "LABQUEUE_SECRET_KEY": "a-test-only-secret-key",
        "SENTRY_DSN": "http://public-key@127.0.0.1:9/1",
    }

    run = subprocess.run(
        [sys.executable, "-c", program], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )

    assert run.returncode == 0, run.stderr
    active, integrations = run.stdout.splitlines()
    assert active.startswith("True False labqueue@")
    assert "'django'" in integrations and "'celery'" in integrations
