"""Which environment turns local passwords on: only the demo or LABQUEUE_LOCAL_PASSWORDS=1, and never
with LABQUEUE_SSO_ONLY=1. Read by a fresh process from portal/settings.py, as a deployment would."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
READ = "from django.conf import settings as s; print(s.LABQUEUE_LOCAL_PASSWORDS, s.SOCIALACCOUNT_ONLY)"


@pytest.mark.parametrize(
    "environment, on",
    [
        ({}, False),
        ({"LABQUEUE_DEMO": "1"}, True),
        ({"LABQUEUE_LOCAL_PASSWORDS": "1"}, True),
        ({"LABQUEUE_LOCAL_PASSWORDS": "0", "LABQUEUE_DEMO": "0"}, False),
        ({"LABQUEUE_DEMO": "1", "LABQUEUE_SSO_ONLY": "1"}, False),
        ({"LABQUEUE_LOCAL_PASSWORDS": "1", "LABQUEUE_SSO_ONLY": "1"}, False),
    ],
)
def test_local_passwords_are_off_unless_the_demo_or_the_setting_turns_them_on(environment, on):
    env = {"PATH": "/usr/bin:/bin", "LABQUEUE_SECRET_KEY": "x", "DJANGO_SETTINGS_MODULE": "portal.settings"}
    result = subprocess.run(
        [sys.executable, "-c", READ], cwd=REPO, env=env | environment, capture_output=True, text=True, timeout=60
    )

    assert result.stdout.split() == [str(on), str(not on)], result.stderr
