"""What an instructor (or a file an instructor uploads) sends beyond the course's own rules: a pattern that would
compile into a huge program, half of a surrogate pair in parameters or an assignment file, an assignment file
imported over an assignment it would strip of its dates and check, weekly labs far out or over thousands of
years. Database only, no Slurm."""

import html
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from courses.models import Assignment, Hint, LabSession
from courses.services import assignment_save
from tests.courses.test_lab_series import series_form


def text_of(response) -> str:
    return html.unescape(response.content.decode())


# ---- Patterns ----


def test_a_hint_pattern_that_compiles_into_a_huge_program_is_refused(client, instructor, course):
    """regex expands counted repeats when it compiles: `(?:a{1000}){1000}` takes ~0.5 s and ~270 MB before
    any time-bounded match starts, `(?:a{10000}){10000}` (19 characters) exhausts the host's memory. No
    timeout covers regex.compile."""
    client.force_login(instructor)
    data = {"assignment": "", "state": "", "pattern": "(?:a{1000}){1000}", "message": "x"}
    response = client.post(reverse("courses:hint-list", args=["cs101"]), data)
    assert response.status_code == 200
    assert "multiply to too large a pattern" in text_of(response)
    assert not Hint.objects.exists()


# ---- Lone surrogates: JSON and YAML decode them, UTF-8 cannot hold them ----


def assignment_post(**overrides) -> dict:
    data = {
        "title": "Surrogates",
        "slug": "surrogates",
        "description": "",
        "script_template": "echo hi\n",
        "check_script": "",
        "gpus": "1",
        "cpus": "1",
        "mem_mb": "500",
        "minutes": "5",
        "parameters": "[]",
    }
    data.update(overrides)
    return data


@pytest.mark.parametrize("action", ["preview", "save"])
def test_a_lone_surrogate_in_the_parameters_json_is_refused_not_a_server_error(client, instructor, course, action):
    client.force_login(instructor)
    parameters = '[{"name": "X", "type": "int", "default": 1, "help": "\\ud800"}]'
    data = assignment_post(parameters=parameters, **{action: "1"})
    client.raise_request_exception = False
    response = client.post(reverse("courses:assignment-create", args=["cs101"]), data)
    assert response.status_code == 200
    assert "parameters" in response.context["form"].errors
    assert not Assignment.objects.exists()


def test_a_lone_surrogate_in_an_assignment_file_is_refused_not_a_server_error(client, instructor, course):
    client.force_login(instructor)
    text = (
        'labqueue: 1\ntitle: "x\\ud800"\nslug: s\ndescription: ""\nscript_template: "echo hi\\n"\nparameters: []\n'
        "resources: {gpus: 1, cpus: 1, mem_mb: 500, minutes: 5}\n"
    )
    client.raise_request_exception = False
    response = client.post(
        reverse("courses:assignment-import", args=["cs101"]),
        {"assignment_file": SimpleUploadedFile("a.yaml", text.encode(), content_type="text/yaml")},
    )
    assert response.status_code == 400
    assert not Assignment.objects.exists()


# ---- An assignment file imported over the assignment keeps what the file does not hold ----


def test_importing_an_assignment_file_keeps_the_assignments_dates_and_check(client, instructor, assignment):
    """The file leaves out dates ("they belong to a term") and the check script; importing it over the
    assignment must not erase them: students could then submit after a refuse-late due date, ungraded."""
    due = timezone.now() - timedelta(days=1)
    assignment_save(
        course=assignment.course,
        fields={"due_at": due, "late_policy": "refuse", "check_script": 'echo "SCORE 1/1"'},
        datasets=[],
        assignment=assignment,
        actor=instructor,
    )
    client.force_login(instructor)
    text = client.get(reverse("courses:assignment-export", args=["cs101", "hello"])).content.decode()
    url = reverse("courses:assignment-import", args=["cs101"])
    assert client.post(url, {"yaml_text": text, "confirm": "1"}).status_code == 302
    assignment.refresh_from_db()
    assert assignment.due_at == due
    assert assignment.check_script == 'echo "SCORE 1/1"'


# ---- Lab series: numbers and dates far out ----


@pytest.mark.parametrize(
    "overrides",
    [
        {"minutes": str(10**12)},
        {"first_date": "9999-12-31", "last_date": "9999-12-31"},
    ],
    ids=["huge-length", "last-week-of-the-calendar"],
)
def test_a_weekly_lab_far_out_is_refused_not_a_server_error(client, instructor, course, overrides):
    client.force_login(instructor)
    client.raise_request_exception = False
    response = client.post(reverse("courses:lab-list", args=["cs101"]), series_form(gpus="1", **overrides))
    assert response.status_code == 400
    assert not LabSession.objects.exists()


def test_a_weekly_lab_over_thousands_of_years_is_refused_at_once(client, instructor, course, settings):
    """Every date of the range is built and checked (and each refusal listed) before anything is refused."""
    client.force_login(instructor)
    first = timezone.localdate() + timedelta(days=1)
    response = client.post(
        reverse("courses:lab-list", args=["cs101"]),
        series_form(gpus="1", first_date=first.isoformat(), last_date="9999-12-01"),
    )
    assert response.status_code == 400
    assert len(response.content) < 200_000, f"the refusal page is {len(response.content)} bytes"
