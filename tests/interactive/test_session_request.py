"""Asking for a notebook session: what the portal decides before anything reaches Slurm (jobs.services), so no
cluster. The sessions themselves, on the lab cluster, are tests/interactive/test_session_lab.py."""

import html
from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from courses.models import LabSession
from jobs.models import Job
from jobs.sessions import session_launcher
from tests.conftest import submit_form


def test_sessions_only_during_labs_are_refused_outside_a_lab(client, student, notebook):
    notebook.interactive_labs_only = True
    notebook.save()
    client.force_login(student)
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    assert response.status_code == 400
    assert (
        "Notebook sessions for this assignment open only while one of the course's labs is on, and none is on now. "
        "The course page lists the next lab."
    ) in html.unescape(response.content.decode())
    assert not Job.objects.filter(user=student).exists()
    now = timezone.now()
    LabSession.objects.create(
        course=notebook.course, starts_at=now - timedelta(minutes=5), ends_at=now + timedelta(hours=1)
    )
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())
    assert response.status_code == 302
    job = Job.objects.get(user=student)
    assert job.session.ready_at is None
    assert job.script.rstrip().endswith(session_launcher(job_uuid=job.uuid).rstrip())  # it starts the session
