"""Grades back to the LMS (AGS): when a check finishes, the student's gradebook score reaches the platform's
gradebook once, into the assignment's line item; a newer score replaces it; a failing LMS is tried again."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from jobs.checks import checks_finish
from jobs.models import CheckRun, CheckStatus, Status
from jobs.signals import check_finished
from lms.models import ScorePost, ScoreStatus
from lms.tasks import score_post
from slurm.records import AcctRecord
from tests.conftest import job_row
from tests.lms.conftest import launch
from tests.lms.test_launch import link_course


@pytest.fixture
def scored_course(client, platform, course, instructor, student, assignment):
    link_course(client, platform, course)
    platform.trust_tool(client.get("/lms/jwks.json").json())
    client.logout()
    launch(client, platform, netid="student1", roles=["Learner"])  # the LMS user id the scores are posted for
    return course


def check_done(student, assignment, score: str, most: str = "10") -> CheckRun:
    job = job_row(student, assignment, status=Status.COMPLETED)
    return CheckRun.objects.create(job=job, status=CheckStatus.DONE, score=Decimal(score), max_score=Decimal(most))


def finished(run: CheckRun, django_capture_on_commit_callbacks) -> None:
    """What jobs.checks.checks_finish does once the check is DONE; the tasks it enqueues run here."""
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        check_finished.send_robust(sender=CheckRun, check_run=run)
    for callback in callbacks:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(score_post, "delay", lambda *args: score_post.apply(args=args))
            callback()


def test_a_finished_check_sends_the_gradebook_score_once(
    platform, scored_course, student, assignment, django_capture_on_commit_callbacks
):
    run = check_done(student, assignment, "7")
    finished(run, django_capture_on_commit_callbacks)
    finished(run, django_capture_on_commit_callbacks)  # the same score again: not sent again
    [item] = platform.line_items
    assert item["resourceId"] == str(assignment.uuid) and item["label"] == assignment.title
    [score] = platform.scores
    assert (score["userId"], score["scoreGiven"], score["scoreMaximum"]) == ("lms-user-1", 7.0, 10.0)
    post = ScorePost.objects.get()
    assert post.status == ScoreStatus.SENT and post.sent_at is not None


def test_a_better_score_replaces_the_one_sent_and_a_worse_one_sends_nothing(
    platform, scored_course, student, assignment, django_capture_on_commit_callbacks
):
    finished(check_done(student, assignment, "7"), django_capture_on_commit_callbacks)
    finished(check_done(student, assignment, "9"), django_capture_on_commit_callbacks)
    finished(check_done(student, assignment, "3"), django_capture_on_commit_callbacks)  # the gradebook keeps 9
    assert [score["scoreGiven"] for score in platform.scores] == [7.0, 9.0]
    assert len(platform.line_items) == 1


def test_a_failing_lms_is_tried_again(platform, scored_course, student, assignment):
    platform.scores_refused = 2  # the LMS answers 503 twice, then takes it
    check_done(student, assignment, "8")
    assert score_post.apply(args=[student.pk, assignment.pk, platform_context_pk()]).state == "SUCCESS"
    assert [score["scoreGiven"] for score in platform.scores] == [8.0]
    assert ScorePost.objects.get().status == ScoreStatus.SENT


def test_what_a_failing_lms_answered_is_kept_when_it_never_takes_the_score(
    platform, scored_course, student, assignment
):
    platform.scores_refused = 100
    check_done(student, assignment, "8")
    assert score_post.apply(args=[student.pk, assignment.pk, platform_context_pk()]).state == "FAILURE"
    post = ScorePost.objects.get()
    assert post.status == ScoreStatus.FAILED and "did not take the score" in post.answer
    assert platform.scores == [] and platform.scores_refused == 100 - 9  # the first try and 8 retries


def platform_context_pk() -> int:
    from lti_tool.models import LtiContext

    return LtiContext.objects.get(course_link__isnull=False).pk


def test_a_student_who_never_launched_from_the_lms_gets_nothing_sent_and_the_reason_kept(
    client, platform, course, instructor, classmate, assignment, django_capture_on_commit_callbacks
):
    link_course(client, platform, course)
    platform.trust_tool(client.get("/lms/jwks.json").json())
    finished(check_done(classmate, assignment, "5"), django_capture_on_commit_callbacks)
    assert platform.scores == []
    assert "has not opened LabQueue from this LMS course" in ScorePost.objects.get().answer


def test_checks_finish_tells_the_listeners_once(student, assignment):
    run = CheckRun.objects.create(
        job=job_row(student, assignment, status=Status.COMPLETED), status=CheckStatus.RUNNING, slurm_job_id="4242"
    )
    heard = []
    check_finished.connect(
        lambda sender, check_run, **kwargs: heard.append(check_run.pk), dispatch_uid="test", weak=False
    )
    try:
        record = AcctRecord(
            "4242",
            "check",
            "student1",
            "cs101",
            "gpu",
            "normal",
            "",
            "COMPLETED",
            "",
            0,
            None,
            "",
            None,
            None,
            datetime(2026, 1, 1, tzinfo=UTC),
            3,
        )
        checks_finish([run], {"4242": record})
        checks_finish([CheckRun.objects.get(pk=run.pk)], {"4242": record})  # the sync sees it again
    finally:
        check_finished.disconnect(dispatch_uid="test")
    assert heard == [run.pk]
