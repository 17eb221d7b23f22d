"""Attacks on string parameter patterns: a pattern that backtracks catastrophically is refused when
the instructor saves it, and one saved earlier cannot make a student's submission spin."""

import html
import json

import pytest
from django.urls import reverse

from courses.models import Assignment
from jobs.models import Job
from tests.conftest import submit_form

#: Accepted by `re.compile`; a whole-value match of a run of letters ending in a character the pattern
#: refuses backtracks exponentially, in `re` (4 s at 36 letters, 8 times longer every 4 more) and in `regex`.
#: (The issue's `([a-z0-9]+-?)+` blows up in `re` only: `regex`, which matches patterns now, refuses a
#: 200-character hostile value for it in under a millisecond.)
CATASTROPHIC = "([a-z0-9]|[a-z0-9]{2})+"
HOSTILE_VALUE = "a" * 36 + "!"


def assignment_form(parameters: list[dict]) -> dict:
    return {
        "title": "Slugs",
        "slug": "slugs",
        "description": "",
        "script_template": 'echo "$TAG"\n',
        "parameters": json.dumps(parameters),
        "gpus": "0",
        "cpus": "1",
        "mem_mb": "500",
        "minutes": "5",
        "save": "1",
    }


def test_an_instructor_saving_a_catastrophically_backtracking_parameter_pattern_gets_a_form_error(client, instructor):
    client.force_login(instructor)
    schema = [{"name": "TAG", "type": "string", "default": "run-1", "pattern": CATASTROPHIC}]

    response = client.post(reverse("courses:assignment-create", args=["cs101"]), assignment_form(schema))

    assert response.status_code == 200, "the form comes back with an error, not a redirect"
    page = html.unescape(response.content.decode())
    assert "Parameter 'TAG': the pattern takes too long to match (it backtracks badly); simplify it." in page
    assert CATASTROPHIC in page, "the instructor's text is kept in the form"
    assert not Assignment.objects.filter(slug="slugs").exists()


@pytest.mark.timeout(120)
def test_a_hostile_value_for_a_backtracking_pattern_saved_earlier_is_refused_quickly_with_a_clear_message(
    client, student, assignment
):
    # A pattern saved before the save-time check existed, written straight to the database.
    assignment.parameters = [
        *assignment.parameters[:3],
        {"name": "NAME", "type": "string", "default": "run-1", "pattern": CATASTROPHIC, "help": "", "label": ""},
    ]
    assignment.save(update_fields=["parameters"])
    client.force_login(student)

    response = client.post(
        reverse("jobs:job-create", args=["cs101", assignment.slug]), submit_form(param_NAME=HOSTILE_VALUE)
    )

    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert "This value takes too long to check against the assignment's pattern" in page
    assert f'value="{HOSTILE_VALUE}"' in page, "the student's input is still in the form"
    assert not Job.objects.exists()
