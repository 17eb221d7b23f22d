"""The demo shows every persona: what `scripts/demo` seeds (`manage.py seed_demo`) and the mail and error
pages of the configuration it writes (`scripts/demo --prepare-only`).

The seeded people sign in with the demo password through the real sign-in forms; the operator reaches the
admin, the reports of all courses and the associations page, a student does not. A demo job's completion mail
goes through the worker's own function (jobs.notifications.job_notify) with the demo's mail settings and is
read back from the inbox folder the README names; the folder itself is written by a portal process running
as the service account with the environment the demo gives its processes. No cluster.
"""

import json
import pwd
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from email import message_from_string, policy
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from courses.models import Assignment, Course, Dataset
from jobs import notifications
from jobs.management.commands.seed_demo import DEMO_PASSWORD
from jobs.models import Job, Status
from portal.models import User
from tests.security.test_demo_secrets import CALLER, prepare
from tests.service_account import MEDIA_BASE, REPO, SERVICE_ACCOUNT, service_argv

STAFF_PAGES = ["/admin/", "/reports/", "/cluster/associations/"]


def demo_env(state: Path) -> dict[str, str]:
    """Everything `<state>/portal.env` exports, read as the shell reads it."""
    done = subprocess.run(
        ["bash", "-c", 'set -e; . "$1"; env -0', "-", str(state / "portal.env")],
        env={"PATH": CALLER["PATH"]},
        capture_output=True,
        check=True,
    )
    pairs = (item.split("=", 1) for item in done.stdout.decode().split("\0") if "=" in item)
    return {name: value for name, value in pairs if name not in ("PATH", "PWD", "SHLVL", "_")}


def in_demo(state: Path, code: str) -> dict:
    """The JSON Python `code` prints in a portal process of the demo (the service account, its environment)."""
    env = {"PATH": CALLER["PATH"], "LANG": "C.UTF-8", "DJANGO_SETTINGS_MODULE": "portal.settings"}
    program = "import django, json\ndjango.setup()\nfrom django.conf import settings\n" + code
    done = subprocess.run(
        service_argv(sys.executable, "-c", program),
        env={**env, **demo_env(state)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def state() -> Iterator[Path]:
    """A demo install of this test's own, where the service account may reach it (tmp_path is root's alone),
    in a folder that does not exist yet, as var/ of a fresh checkout."""
    MEDIA_BASE.mkdir(parents=True, exist_ok=True)
    base = MEDIA_BASE / f"demo-{uuid.uuid4().hex[:12]}"
    base.mkdir(mode=0o755)
    yield base / "var" / "demo"
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def seeded(db, settings, tmp_path) -> None:
    settings.SOCIALACCOUNT_ONLY = False  # the demo's local passwords (LABQUEUE_DEMO)
    call_command("seed_demo", dataset_root=str(tmp_path / "datasets"))


def sign_in(client, username: str) -> None:
    response = client.post(reverse("account_login"), {"login": username, "password": DEMO_PASSWORD})
    assert response.status_code == 302, response.content.decode()[:2000]


def test_the_demos_operator_signs_in_with_the_demo_password_and_reaches_the_admin_reports_and_associations(
    client, seeded
):
    response = client.post(reverse("admin:login"), {"username": "ops1", "password": DEMO_PASSWORD, "next": "/admin/"})
    assert response.status_code == 302 and response["Location"] == reverse("admin:index")

    for page in STAFF_PAGES:
        assert client.get(page).status_code == 200, page
    assert "Site administration" in client.get("/admin/").content.decode()


def test_a_demo_student_and_ta_sign_in_and_are_refused_the_operators_pages_with_the_portals_page(client, seeded):
    for username in ("student1", "ta1"):
        client.logout()
        sign_in(client, username)
        refused = client.get("/reports/")
        assert refused.status_code == 403 and "Only operations staff see all courses." in refused.content.decode()
        assert client.get("/cluster/associations/").status_code == 403


def test_the_demo_seeds_addresses_for_all_but_the_student_who_shows_setting_ones_own(seeded):
    emails = dict(User.objects.values_list("username", "email"))
    assert emails == {
        "instructor1": "instructor1@cs101.example.edu",
        "ta1": "ta1@cs101.example.edu",
        "student1": "student1@cs101.example.edu",
        "student2": "student2@cs101.example.edu",
        "student3": "",
        "ops1": "ops1@cs101.example.edu",
    }
    operator = User.objects.get(username="ops1")
    assert operator.is_staff and operator.is_superuser and operator.netid is None


def test_seeding_again_keeps_an_address_a_student_confirmed_and_their_mail_choices(client, seeded, tmp_path):
    student = User.objects.get(username="student3")
    student.email = "lee@mail.example.org"
    student.save(update_fields=["email"])
    sign_in(client, "student3")
    client.post(reverse("jobs:notification-settings"), {"notify_failed": "on"})

    call_command("seed_demo", dataset_root=str(tmp_path / "datasets"))

    student.refresh_from_db()
    assert student.email == "lee@mail.example.org"
    assert not notifications.notification_preference_get(user=student).notify_finished


def test_a_demo_jobs_completion_mail_is_a_file_in_the_demo_inbox(client, seeded, settings, tmp_path):
    inbox = tmp_path / "mail"
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"  # what scripts/demo sets
    settings.EMAIL_FILE_PATH = str(inbox)
    sign_in(client, "student1")
    form = {"param_EPOCHS": "1", "param_LR": "0.01", "param_MODEL": "small", "gpus": "1", "cpus": "1"}
    dataset = Dataset.objects.get(course__slug="cs101-demo")
    form |= {"mem_mb": "1000", "minutes": "5", "dataset": str(dataset.pk)}
    response = client.post(reverse("jobs:assignment-detail", args=["cs101-demo", "gpu-hello"]), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    job = Job.objects.get(user__username="student1")
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        status=Status.COMPLETED, slurm_state="COMPLETED", slurm_job_id="77", exit_code=0, ended_at=now
    )

    assert notifications.job_notify(job_id=job.pk) is True

    [mail_file] = inbox.iterdir()
    mail = message_from_string(mail_file.read_text().split("\n" + "-" * 79 + "\n")[0], policy=policy.default)
    assert mail["To"] == "student1@cs101.example.edu"
    assert mail["Subject"].strip().startswith("LabQueue: your job finished: Lab 1: Hello, GPU")
    assert str(job.uuid) in mail.get_content()


def test_the_demos_inbox_is_written_by_the_service_account_and_closed_to_students(state):
    prepare(state)
    env = demo_env(state)
    assert env["EMAIL_BACKEND"] == "django.core.mail.backends.filebased.EmailBackend"
    assert env["EMAIL_FILE_PATH"] == str(state / "mail")

    sent = in_demo(
        state,
        "from django.core.mail import send_mail\n"
        "print(json.dumps(send_mail('Confirm your address', 'the link', None, ['lee@mail.example.org'])))",
    )

    assert sent == 1
    [mail_file] = (state / "mail").iterdir()
    assert mail_file.stat().st_uid == pwd.getpwnam(SERVICE_ACCOUNT).pw_uid
    assert "Subject: Confirm your address" in mail_file.read_text()
    read = subprocess.run(["runuser", "-u", "student1", "--", "cat", str(mail_file)], capture_output=True)
    assert read.returncode != 0 and read.stdout == b"", "a student cannot read the demo's mail"


def test_the_demo_answers_errors_with_the_portals_own_pages_not_djangos_debug_pages(state):
    prepare(state)

    pages = in_demo(
        state,
        "from django.test import Client, RequestFactory\nfrom django.urls import get_resolver\n"
        "from django.core.exceptions import PermissionDenied\n"
        "missing = Client().get('/no-such-page/', HTTP_HOST='127.0.0.1')\n"
        "request = RequestFactory().get('/', HTTP_HOST='127.0.0.1')\n"
        "handlers = get_resolver().resolve_error_handler\n"
        "refused = handlers(403)(request, PermissionDenied('Only operations staff see all courses.'))\n"
        "failed = handlers(500)(request)\n"
        "print(json.dumps({'debug': settings.DEBUG, 'pages': [[r.status_code, r.content.decode()] for r in"
        " (missing, refused, failed)]}))",
    )

    assert pages["debug"] is False
    [(missing, missing_page), (refused, refused_page), (failed, failed_page)] = pages["pages"]
    assert missing == 404 and "Page not found" in missing_page and "Django" not in missing_page
    assert refused == 403 and "Only operations staff see all courses." in refused_page
    assert failed == 500 and "Something went wrong" in failed_page and "Traceback" not in failed_page


def test_the_demo_seeds_a_notebook_assignment_and_gives_the_portal_the_proxy_secret_and_the_labs_set_up(seeded, state):
    notebook = Assignment.objects.get(course__slug="cs101-demo", slug="notebook")
    assert notebook.interactive and (notebook.gpus, notebook.minutes) == (1, 30)
    prepare(state)
    env = demo_env(state)
    assert env["LABQUEUE_INTERACTIVE_SETUP"] == ". /opt/labqueue/jupyter/bin/activate"
    assert (
        env["LABQUEUE_INTERACTIVE_PROXY_SECRET"] == (state / "secrets" / "interactive-proxy-secret").read_text().strip()
    )
    assert f'"{env["LABQUEUE_INTERACTIVE_PROXY_SECRET"]}"' in (state / "nginx" / "labqueue.conf").read_text()


def test_the_demo_has_one_course_per_cluster_the_second_on_lab2_with_the_same_people_seeded_once(
    db, settings, state, tmp_path
):
    settings.SOCIALACCOUNT_ONLY = False
    call_command("seed_demo", dataset_root=str(tmp_path / "datasets"))
    assert list(Course.objects.values_list("slug", flat=True)) == ["cs101-demo"], "a site without lab2: one course"

    prepare(state)
    env = demo_env(state)
    assert env["LABQUEUE_SLURM_OTHER_CLUSTERS"] == "lab2"
    assert json.loads(env["LABQUEUE_RESERVABLE_NODES_BY_CLUSTER"]) == {"lab2": ["gpu3", "gpu4"]}
    settings.LABQUEUE_SLURM_OTHER_CLUSTERS = ["lab2"]
    for _ in range(2):  # seeding again changes nothing
        call_command("seed_demo", dataset_root=str(tmp_path / "datasets"))

    first, second = Course.objects.order_by("slug")
    assert (first.slug, first.cluster, second.slug, second.cluster) == ("cs101-demo", "", "cs102-demo", "lab2")
    second.full_clean()  # lab2 is one of the site's other clusters

    def people(course: Course) -> list[tuple[str, str]]:
        return sorted(course.enrollments.values_list("user__username", "role"))

    assert people(second) == people(first) and len(people(first)) == 5
    assert list(second.assignments.values_list("slug", flat=True)) == ["gpu-hello"]
