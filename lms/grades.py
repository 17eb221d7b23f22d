"""Grades back to the LMS (LTI Assignment and Grade Services), worker side: lms.tasks.score_post.

When a check finishes (jobs.signals.check_finished, heard by lms.receivers) the student's score as the gradebook
shows it (jobs.gradebook: the best attempt) is sent to each LMS course linked to the assignment's course that
lets the tool publish scores: into the line item of the assignment (found by its UUID as resource id, made on
first use). A score already sent is not sent again; a newer one replaces it. The row of each send (ScorePost)
says when it was sent or what the LMS answered; when the LMS failed, the task tries again later.
"""

from __future__ import annotations

from decimal import Decimal

from django.db import transaction
from django.utils import timezone
from lti_tool.models import Key, LtiContext, LtiLineItem, LtiUser
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from requests import RequestException

from courses.models import Assignment
from jobs.gradebook import gradebook_rows
from lms.connector import LmsServiceConnector
from lms.models import ScorePost, ScoreStatus

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"


def score_contexts(*, assignment: Assignment) -> list[LtiContext]:
    """The LMS courses linked to the assignment's course that take scores from the tool."""
    linked = LtiContext.objects.filter(course_link__course=assignment.course_id, can_publish_scores=True)
    return list(linked.exclude(lineitems_url=""))


@transaction.atomic
def score_post(*, user, assignment: Assignment, context: LtiContext) -> ScorePost:
    """Send the student's gradebook score to one LMS course, unless that very score was sent already."""
    post, _ = ScorePost.objects.select_for_update().get_or_create(user=user, assignment=assignment, context=context)
    row = next((row for row in gradebook_rows(assignment=assignment) if row.netid == user.netid), None)
    if row is None or not row.best:
        return post
    score, maximum = Decimal(row.best), Decimal(row.best_max)
    if post.status == ScoreStatus.SENT and (post.score, post.max_score) == (score, maximum):
        return post
    sub = LtiUser.objects.filter(registration=context.deployment.registration, auth_user=user).values_list(
        "sub", flat=True
    )
    if not sub:
        return _record(post, ScoreStatus.NOT_SENT, "The student has not opened LabQueue from this LMS course yet.")
    try:
        _send(context=context, assignment=assignment, sub=sub[0], score=score, maximum=maximum)
    except (LtiException, RequestException, ValueError, Key.DoesNotExist) as error:
        return _record(post, ScoreStatus.FAILED, f"The LMS did not take the score: {error}")
    return _record(post, ScoreStatus.SENT, "", score=score, max_score=maximum, sent_at=timezone.now())


def _record(post: ScorePost, status: str, answer: str, **fields) -> ScorePost:
    for name, value in {"status": status, "answer": answer, **fields}.items():
        setattr(post, name, value)
    post.save()
    return post


def _send(*, context: LtiContext, assignment: Assignment, sub: str, score: Decimal, maximum: Decimal) -> None:
    scopes = [SCORE_SCOPE] + ([LINEITEM_SCOPE] if context.can_manage_lineitems else [])
    ags = AssignmentsGradesService(
        LmsServiceConnector(context.deployment.registration.to_registration()),
        {"lineitems": context.lineitems_url, "scope": scopes},
    )
    line_item = _line_item(ags, context=context, assignment=assignment, maximum=maximum)
    grade = (
        Grade()
        .set_user_id(sub)
        .set_score_given(float(score))
        .set_score_maximum(float(maximum))
        .set_activity_progress("Completed")
        .set_grading_progress("FullyGraded")
        .set_timestamp(timezone.now().isoformat())
    )
    ags.put_grade(grade, line_item)


def _line_item(ags: AssignmentsGradesService, *, context: LtiContext, assignment: Assignment, maximum: Decimal):
    known = LtiLineItem.objects.filter(context=context, resource_id=str(assignment.uuid)).first()
    if known is not None:
        return LineItem({"id": known.url, "scoreMaximum": known.maximum_score, "label": known.label})
    wanted = (
        LineItem()
        .set_label(assignment.title)
        .set_score_maximum(float(maximum))
        .set_resource_id(str(assignment.uuid))
        .set_tag("labqueue")
    )
    item = ags.find_or_create_lineitem(wanted, find_by="resource_id")
    LtiLineItem.objects.create(
        context=context,
        url=item.get_id(),
        maximum_score=item.get_score_maximum() or float(maximum),
        label=item.get_label() or assignment.title,
        tag="labqueue",
        resource_id=str(assignment.uuid),
    )
    return item
