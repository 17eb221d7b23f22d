"""The assignment page and the job request it sends are one view: a refused request shows the same page as
the first showing (the next lab, and for course staff the script preview and its versions), with what was
typed and why it was refused."""

import re
from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from courses.models import LabSession
from jobs.models import Job
from tests.conftest import submit_form

PAGE = reverse("jobs:assignment-detail", args=["cs101", "hello"])
SUBMIT = reverse("jobs:job-create", args=["cs101", "hello"])
SECTIONS = re.compile(r'id="(next-lab|script-versions)"|<h2>(Script preview[^<]*)</h2>')


def sections(html: str) -> set[str]:
    return {first or second for first, second in SECTIONS.findall(html)}


def test_a_refused_request_shows_the_preview_versions_and_next_lab_as_the_page_does(
    client, instructor, course, assignment
):
    LabSession.objects.create(
        course=course, starts_at=timezone.now() + timedelta(days=1), ends_at=timezone.now() + timedelta(days=1, hours=2)
    )
    client.force_login(instructor)
    assert client.post(SUBMIT, submit_form()).status_code == 302, "a first job records the script's first version"
    shown = client.get(PAGE)
    assert sections(shown.content.decode()) == {"next-lab", "script-versions", "Script preview (default values)"}

    refused = client.post(SUBMIT, submit_form(param_EPOCHS="99", param_NAME="typed-by-hand"))

    assert refused.status_code == 400
    html = refused.content.decode()
    assert sections(html) == sections(shown.content.decode())
    assert 'value="typed-by-hand"' in html, "what was typed is kept"
    assert Job.objects.count() == 1


def test_a_student_sees_the_next_lab_after_a_refused_request_and_no_staff_sections(client, student, course, assignment):
    LabSession.objects.create(
        course=course, starts_at=timezone.now() + timedelta(days=1), ends_at=timezone.now() + timedelta(days=1, hours=2)
    )
    client.force_login(student)

    refused = client.post(SUBMIT, submit_form(param_EPOCHS="99"))

    assert refused.status_code == 400
    assert sections(refused.content.decode()) == {"next-lab"} == sections(client.get(PAGE).content.decode())
