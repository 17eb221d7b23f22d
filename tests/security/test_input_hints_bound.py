"""Many hints, each passing the save-time probe but slow on one job's output, cannot slow that job's page
without bound: all of a job's hint patterns share one time budget, and a course holds a bounded number of
hints."""

import logging

from django.urls import reverse

from courses import hints
from courses.models import Hint
from courses.patterns import pattern_problem
from tests.courses.test_hints_shown import HINT, add_hint, finished_job

#: Passes the save-time probe (no "b" runs in it) and backtracks without end on a log of "b"s.
EVASIVE = r"(b|bb)+c"


def test_forty_evasive_hints_share_one_budget_and_the_rest_are_not_tried(
    client, course, assignment, instructor, student, caplog
):
    assert pattern_problem(EVASIVE) == "", "each one passes the probe"
    Hint.objects.bulk_create(
        Hint(course=course, pattern=f"{EVASIVE}{number}", message=f"evasive {number}") for number in range(40)
    )
    add_hint(client, instructor, state="FAILED", message="Read the last lines of job.out.")
    job = finished_job(client, student, out="b" * 4000 + "\n")

    client.force_login(student)
    with caplog.at_level(logging.WARNING, logger="courses.hints"):
        page = client.get(reverse("jobs:job-detail", args=[job.uuid]))

    assert page.status_code == 200
    assert HINT.findall(page.content.decode()) == ["Read the last lines of job.out."], "a hint without a pattern"
    [warning] = [record.getMessage() for record in caplog.records if "not tried" in record.getMessage()]
    untried = int(warning.split(": ")[1].split(" pattern(s)")[0])
    tried = 40 - untried
    most = hints.HINTS_MATCH_SECONDS / hints.MATCH_SECONDS + 1  # each slow search uses up to MATCH_SECONDS
    assert 1 <= tried <= most, f"{tried} of 40 slow patterns tried within the job's budget"


def test_a_course_holds_a_bounded_number_of_hints_and_the_form_says_what_to_do(client, course, instructor, settings):
    settings.LABQUEUE_MAX_HINTS_PER_COURSE = 3
    for number in range(3):
        add_hint(client, instructor, pattern=f"error {number}", message=f"hint {number}")

    refused = client.post(
        reverse("courses:hint-list", args=["cs101"]),
        {"assignment": "", "state": "", "pattern": "error 4", "message": "one too many"},
    )

    assert refused.status_code == 200
    assert "already has 3 hints, the most a course may have" in refused.content.decode()
    assert "Delete a hint the course no longer needs" in refused.content.decode()
    assert Hint.objects.filter(course=course).count() == 3
