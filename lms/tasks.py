"""Celery tasks of the LMS app: thin wrappers that take ids (worker side)."""

from celery import shared_task
from django.contrib.auth import get_user_model
from lti_tool.models import LtiContext

from courses.models import Assignment
from lms import grades, roster
from lms.models import CourseLink, ScoreStatus


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
