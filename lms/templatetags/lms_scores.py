"""The gradebook page's "Sent to the LMS" column (jobs does not import lms): for each student, when their score was
sent to the linked LMS course or what the LMS answered. Web side; two queries for the whole table."""

from __future__ import annotations

from dataclasses import dataclass, field

from django import template

from jobs.gradebook import points
from lms.models import CourseLink, ScorePost

register = template.Library()
register.filter("points", points)  # a score as the gradebook writes it ("7.5", "10")


@dataclass(frozen=True)
class LmsScores:
    """The assignment's score posts by netid; `linked` is False when the course has no LMS course (no column)."""

    linked: bool
    by_netid: dict[str, list[ScorePost]] = field(default_factory=dict)


@register.simple_tag
def lms_scores(assignment) -> LmsScores:
    """Every student's score posts of the assignment in one query (after one that asks whether it is linked)."""
    if not CourseLink.objects.filter(course_id=assignment.course_id).exists():
        return LmsScores(linked=False)
    by_netid: dict[str, list[ScorePost]] = {}
    posts = ScorePost.objects.filter(assignment=assignment).select_related("user", "context").order_by("context_id")
    for post in posts:
        by_netid.setdefault(post.user.netid or "", []).append(post)
    return LmsScores(linked=True, by_netid=by_netid)


@register.inclusion_tag("lms/_score_cell.html")
def lms_score_cell(scores: LmsScores, netid: str) -> dict:
    """One student's cell: each LMS course's post (sent when, or the LMS's answer), or that none was sent."""
    posts = scores.by_netid.get(netid, [])
    return {"posts": posts, "several": len({post.context_id for post in posts}) > 1}
