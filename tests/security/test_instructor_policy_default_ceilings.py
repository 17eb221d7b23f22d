"""A fresh installation that sets no ceiling still bounds what an instructor may give a course: the course-wide
GPUs, the GPU-hour budget and the jobs per student have safe shipped ceilings (they used to mean "no limit"),
and `manage.py doctor`, run as the service account, warns about each ceiling the site left to its default or
set to 0."""

import html
import json
import os
import re
import subprocess
import sys

import pytest
from django.urls import reverse

from tests.service_account import REPO, service_argv, service_env, service_media  # noqa: F401 (a fixture)

BOUNDLESS = {
    "max_gpus_per_job": "1",
    "max_cpus_per_job": "4",
    "max_mem_mb_per_job": "4000",
    "max_minutes_per_job": "30",
    "max_running_jobs_per_student": "32767",
    "max_queued_jobs_per_student": "32767",
    "gpu_hours_per_student": "2000000000",
    "max_gpus_course": "32767",
    "partition": "gpu",
    "qos": "",
}


def shipped_ceilings() -> dict[str, int]:
    """The ceilings of an installation whose environment sets none, read from the settings of a fresh process
    (the other tests run as a site without these three: tests/lab.py TEST_SITE_CEILINGS)."""
    env = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "LABQUEUE_SECRET_KEY": "test-only-secret",
        "DATABASE_URL": os.environ["DATABASE_URL"],
    }
    code = (
        "import json, django; django.setup(); from django.conf import settings; "
        "print(json.dumps({name: getattr(settings, name) for name in settings.LABQUEUE_CEILINGS_DEFAULTED}))"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_without_any_ceiling_set_an_instructor_cannot_give_a_course_32767_gpus_or_2_billion_gpu_hours(
    client, instructor, course, settings
):
    shipped = shipped_ceilings()
    assert len(shipped) == 7, "an installation that sets no ceiling leaves every one to its default"
    for name, value in shipped.items():
        setattr(settings, name, value)
    client.force_login(instructor)

    response = client.post(reverse("courses:course-policy", args=["cs101"]), BOUNDLESS)

    assert response.status_code == 400
    text = html.unescape(response.content.decode())
    assert "This course may allow at most 16 GPUs for the whole course at once" in text
    assert "This course may allow at most 100 GPU-hours per student" in text
    assert "This course may allow at most 20 running jobs per student" in text
    assert "This course may allow at most 20 waiting or running jobs per student" in text
    course.refresh_from_db()
    assert course.max_gpus_course != 32767 and course.gpu_hours_per_student != 2000000000


def doctor_ceilings(settings, **env: str) -> tuple[str, str, str]:
    """`manage.py doctor` as the service account with the installation's environment: its ceilings line."""
    done = subprocess.run(
        service_argv(sys.executable, "manage.py", "doctor"),
        env={**_without_ceilings(service_env(settings)), **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r"^(\w+)\s+ceilings: (.*)\n(?:      fix: (.*))?", done.stdout, re.M)
    assert found, done.stdout + done.stderr
    return found.group(1), found.group(2), found.group(3) or ""


def _without_ceilings(env: dict[str, str]) -> dict[str, str]:
    """The installation's environment with no LABQUEUE_CEILING_* in it (those the test gives come back)."""
    return {name: value for name, value in env.items() if not name.startswith("LABQUEUE_CEILING_")}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("service_media")
def test_doctor_warns_about_each_ceiling_left_to_its_default_or_set_to_none(settings):
    status, detail, fix = doctor_ceilings(settings, LABQUEUE_CEILING_GPUS_PER_COURSE="0")

    assert status == "WARN"
    assert "no ceiling on LABQUEUE_CEILING_GPUS_PER_COURSE (0)" in detail
    assert "LABQUEUE_CEILING_GPU_HOURS_PER_STUDENT=100" in detail and "LABQUEUE_CEILING_JOBS_PER_STUDENT=20" in detail
    assert "left to the shipped default" in detail
    assert fix.startswith("Set each LABQUEUE_CEILING_* in the portal's environment")

    chosen = {
        f"LABQUEUE_CEILING_{name}": value
        for name, value in (
            ("GPUS_PER_JOB", "2"),
            ("CPUS_PER_JOB", "8"),
            ("MEM_MB_PER_JOB", "32000"),
            ("MINUTES_PER_JOB", "240"),
            ("JOBS_PER_STUDENT", "4"),
            ("GPU_HOURS_PER_STUDENT", "20"),
            ("GPUS_PER_COURSE", "8"),
        )
    }
    assert doctor_ceilings(settings, **chosen)[0] == "OK"
