"""Line items before the first score, and lateness with the score: an assignment with a check in a linked course
gets its column in the LMS's gradebook when the course is linked and from beat's run, once; the score sent says
when the counting attempt was handed in, and that it was late when the gradebook says so."""

from decimal import Decimal

import pytest
from django.utils import timezone

from courses.models import Assignment
from jobs.models import CheckRun, CheckStatus, Status
from lms.grades import LATE_COMMENT
from lms.tasks import line_items_create
from tests.conftest import job_row
from tests.lms.conftest import launch
from tests.lms.test_grades import finished
from tests.lms.test_launch import link_course

CHECK = "#!/bin/bash\necho 'SCORE 1/1'\n"


@pytest.fixture
def checked(assignment):
    Assignment.objects.filter(pk=assignment.pk).update(check_script=CHECK)
    return assignment


def test_linking_a_course_makes_the_line_item_of_each_assignment_with_a_check_before_any_score(
    client, platform, course, instructor, checked, django_capture_on_commit_callbacks
):
    Assignment.objects.create(course=course, slug="nocheck", title="No check", script_template="echo", gpus=0)
    platform.trust_tool(client.get("/lms/jwks.json").json())
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        link_course(client, platform, course)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(line_items_create, "delay", lambda *args: line_items_create.apply(args=args))
        for callback in callbacks:
            callback()
    [item] = platform.line_items
    assert (item["resourceId"], item["label"], item["scoreMaximum"]) == (str(checked.uuid), checked.title, 100)


def test_beat_makes_a_missing_line_item_once_with_the_check_s_maximum(
    client, platform, course, instructor, student, checked
):
    link_course(client, platform, course)
    platform.trust_tool(client.get("/lms/jwks.json").json())
    job = job_row(student, checked, status=Status.COMPLETED)
    CheckRun.objects.create(job=job, status=CheckStatus.DONE, score=Decimal(3), max_score=Decimal(20))
    line_items_create.apply()
    line_items_create.apply()
    [item] = platform.line_items
    assert item["scoreMaximum"] == 20


@pytest.mark.parametrize("late", [True, False])
def test_the_score_says_when_the_counting_attempt_was_handed_in_and_whether_it_was_late(
    client, platform, course, instructor, student, checked, late, django_capture_on_commit_callbacks
):
    link_course(client, platform, course)
    platform.trust_tool(client.get("/lms/jwks.json").json())
    client.logout()
    launch(client, platform, netid="student1", roles=["Learner"])
    job = job_row(student, checked, status=Status.COMPLETED, late=late)
    run = CheckRun.objects.create(job=job, status=CheckStatus.DONE, score=Decimal(7), max_score=Decimal(10))
    finished(run, django_capture_on_commit_callbacks)
    [score] = platform.scores
    submitted = timezone.datetime.fromisoformat(score["submission"]["submittedAt"])
    assert submitted == job.created_at
    assert score.get("comment") == (LATE_COMMENT if late else None)
