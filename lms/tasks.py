"""Celery tasks of the LMS app: thin wrappers that take ids (worker side)."""

import logging

from celery import shared_task
from django.contrib.auth import get_user_model
from lti_tool.models import Key, LtiContext
from pylti1p3.exception import LtiException
from requests import RequestException

from courses.models import Assignment
from lms import grades, roster
from lms.models import CourseLink, ScoreStatus

logger = logging.getLogger(__name__)


def _backoff(retries: int) -> int:
    return min(3600, 30 * 2**retries)


@shared_task(bind=True, max_retries=8)
def score_post(self, user_id: int, assignment_id: int, context_id: int) -> None:
    """Send a student's gradebook score to one LMS course; while the LMS fails, again with a growing wait."""
    post = grades.score_post(
        user=get_user_model().objects.get(pk=user_id),
        assignment=Assignment.objects.get(pk=assignment_id),
        context=LtiContext.objects.get(pk=context_id),
    )
    if post.status == ScoreStatus.FAILED:
        raise self.retry(countdown=_backoff(self.request.retries))


@shared_task
def roster_sync_scheduled() -> None:
    """Beat's roster sync: each linked course whose instructor turned it on takes the LMS's member list."""
    links = CourseLink.objects.filter(roster_sync_scheduled=True).exclude(context__memberships_url="")
    for link in links.select_related("course", "context__deployment__registration"):
        roster.roster_sync_apply(link=link)


@shared_task
def line_items_create(context_id: int | None = None) -> None:
    """The line items of the assignments with a check, in one linked LMS course (when it is linked) or, from
    beat, in each; an LMS that fails is tried again at the next run."""
    contexts = LtiContext.objects.filter(course_link__isnull=False, can_manage_lineitems=True, **grades.ACTIVE)
    if context_id is not None:
        contexts = contexts.filter(pk=context_id)
    for context in contexts.select_related("deployment__registration"):
        try:
            grades.line_items_create(context=context)
        except (LtiException, RequestException, ValueError, Key.DoesNotExist) as error:
            logger.warning("Line items of %s not made, tried again at the next run: %s", context, error)
