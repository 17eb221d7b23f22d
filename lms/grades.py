"""Grades back to the LMS (LTI Assignment and Grade Services), worker side: lms.tasks.score_post.

When a check finishes (jobs.signals.check_finished, heard by lms.receivers) the student's score as the gradebook
shows it (jobs.gradebook: the best attempt) is sent to each LMS course linked to the assignment's course that
lets the tool publish scores: into the line item of the assignment (found by its UUID as resource id, made on
first use, or before by lms.tasks.line_items_create for each assignment with a check). The late flag goes with it
as the gradebook shows it (score_grade). A score already sent is not sent again; a newer one replaces it. The row
of each send (ScorePost) says when it was sent or what the LMS answered; when the LMS failed, the task tries again
later.
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
from jobs.gradebook import GradeRow, gradebook_rows
from jobs.models import CheckRun, CheckStatus
from lms.connector import LmsServiceConnector
from lms.models import ScorePost, ScoreStatus

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
CANVAS_SUBMISSION = "https://canvas.instructure.com/lti/submission"
LATE_COMMENT = "Late: the attempt whose score counts was handed in after the due date."
DEFAULT_MAXIMUM = Decimal(100)
#: An LMS course's filter: its deployment and registration not switched off by an operator
ACTIVE = {"deployment__is_active": True, "deployment__registration__is_active": True}


def score_contexts(*, assignment: Assignment) -> list[LtiContext]:
    """The LMS courses linked to the assignment's course that take scores from the tool (of deployments and
    registrations not switched off)."""
    linked = LtiContext.objects.filter(
        course_link__course=assignment.course_id, can_publish_scores=True, **ACTIVE
    ).exclude(lineitems_url="")
    return list(linked)


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
    # Only a member of that LMS course (from their launches there): a course linked to two sections posts each
    # student's score to their own section's gradebook, never to the other's.
    sub = LtiUser.objects.filter(
        registration=context.deployment.registration, auth_user=user, contexts=context
    ).values_list("sub", flat=True)
    if not sub:
        return _record(post, ScoreStatus.NOT_SENT, "The student has not opened LabQueue from this LMS course yet.")
    try:
        _send(context=context, assignment=assignment, sub=sub[0], score=score, maximum=maximum, row=row)
    except (LtiException, RequestException, ValueError, Key.DoesNotExist) as error:
        return _record(post, ScoreStatus.FAILED, f"The LMS did not take the score: {error}")
    return _record(post, ScoreStatus.SENT, "", score=score, max_score=maximum, sent_at=timezone.now())


def _record(post: ScorePost, status: str, answer: str, **fields) -> ScorePost:
    for name, value in {"status": status, "answer": answer, **fields}.items():
        setattr(post, name, value)
    post.save()
    return post


def _ags(context: LtiContext) -> AssignmentsGradesService:
    scopes = [SCORE_SCOPE] + ([LINEITEM_SCOPE] if context.can_manage_lineitems else [])
    return AssignmentsGradesService(
        LmsServiceConnector(context.deployment.registration.to_registration()),
        {"lineitems": context.lineitems_url, "scope": scopes},
    )


def score_grade(*, sub: str, score: Decimal, maximum: Decimal, row: GradeRow) -> Grade:
    """The AGS score of a gradebook row. Lateness as the gradebook shows it (the counting attempt's late flag,
    set by the assignment's late policy): the submission's time (AGS ``submission.submittedAt``, and Canvas's
    ``submitted_at`` extension, from which Canvas marks it late against its own due date) and, when late, a
    comment saying so, which every LMS shows beside the score. AGS has no late field of its own."""
    submitted = row.best_job.created_at.isoformat() if row.best_job else None
    grade = (
        Grade()
        .set_user_id(sub)
        .set_score_given(float(score))
        .set_score_maximum(float(maximum))
        .set_activity_progress("Completed")
        .set_grading_progress("FullyGraded")
        .set_timestamp(timezone.now().isoformat())
    )
    if submitted:
        grade.set_submitted_at(submitted).set_extra_claims({CANVAS_SUBMISSION: {"submitted_at": submitted}})
    if row.late:
        grade.set_comment(LATE_COMMENT)
    return grade


def _send(
    *, context: LtiContext, assignment: Assignment, sub: str, score: Decimal, maximum: Decimal, row: GradeRow
) -> None:
    ags = _ags(context)
    line_item = _line_item(ags, context=context, assignment=assignment, maximum=maximum)
    ags.put_grade(score_grade(sub=sub, score=score, maximum=maximum, row=row), line_item)


def line_items_create(*, context: LtiContext) -> int:
    """Make the line item of each assignment of the linked course that has a check (so it gets scores), before
    its first score; returns how many were made. Its maximum is the check's last known one, else 100 points
    (AGS scales each score by its own scoreMaximum, so a score out of 10 still counts as a share)."""
    if not context.can_manage_lineitems or not context.lineitems_url:
        return 0
    known = LtiLineItem.objects.filter(context=context).values_list("resource_id", flat=True)
    wanted = Assignment.objects.filter(course__lms_links__context=context).exclude(check_script="")
    made = 0
    for assignment in wanted.exclude(uuid__in=[uuid for uuid in known if uuid]):
        maximum = (
            CheckRun.objects.filter(job__assignment=assignment, status=CheckStatus.DONE, max_score__gt=0)
            .order_by("-pk")
            .values_list("max_score", flat=True)
            .first()
        )
        _line_item(_ags(context), context=context, assignment=assignment, maximum=maximum or DEFAULT_MAXIMUM)
        made += 1
    return made


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
