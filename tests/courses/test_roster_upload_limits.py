"""An empty or oversized roster file gets a clear error, no preview to confirm, and changes nothing."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from courses.forms import ROSTER_MAX_BYTES
from courses.models import Enrollment

ROSTER_URL = reverse("courses:roster-import", args=["cs101"])


def upload(client, content: bytes):
    return client.post(ROSTER_URL, {"roster": SimpleUploadedFile("roster.csv", content), "preview": "1"})


def roles(course) -> dict[str, str]:
    return dict(Enrollment.objects.filter(course=course).values_list("user__netid", "role"))


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"", "The submitted file is empty."),
        (b"\n\n  \n", "The header row must name the columns netid, email, name, role"),
    ],
    ids=["no-bytes", "blank-lines"],
)
def test_an_empty_roster_file_is_refused_clearly_and_nothing_changes(
    client, course, instructor, student, classmate, content, error
):
    client.force_login(instructor)
    before = roles(course)
    response = upload(client, content)
    assert response.status_code in (200, 400)
    assert error in response.content.decode()
    assert response.context["confirm"] is None, "nothing to confirm"
    assert roles(course) == before


def test_an_oversized_roster_file_is_refused_clearly_and_nothing_changes(client, course, instructor, student):
    client.force_login(instructor)
    before = roles(course)
    header = b"netid,email,name,role\ninstructor1,,,instructor\nstudent4,,,student\n"
    content = header + b"#" * (ROSTER_MAX_BYTES + 1 - len(header))
    assert len(content) == ROSTER_MAX_BYTES + 1
    response = upload(client, content)
    assert response.status_code == 200
    assert f"A roster file is limited to {ROSTER_MAX_BYTES // 1024} KB." in response.content.decode()
    assert response.context["confirm"] is None and response.context["plan"] is None
    assert roles(course) == before


def test_an_oversized_roster_cannot_be_sent_straight_to_the_confirmation(client, course, instructor, student):
    client.force_login(instructor)
    before = roles(course)
    text = "netid,email,name,role\ninstructor1,,,instructor\nstudent4,,,student\n"
    text += "x" * (ROSTER_MAX_BYTES + 1 - len(text))
    response = client.post(ROSTER_URL, {"csv_text": text, "digest": "0" * 64, "confirm": "1"})
    assert response.status_code == 200
    assert roles(course) == before
