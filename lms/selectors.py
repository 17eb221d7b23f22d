"""Reads of the LMS integration (web side)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from lti_tool.models import LtiContext

from courses.models import Assignment, Course, Role
from lms.models import CourseLink


def course_linked(*, context: LtiContext) -> Course | None:
    link = CourseLink.objects.filter(context=context).select_related("course").first()
    return link.course if link else None


def course_list_linkable(*, user) -> QuerySet[Course]:
    """The LabQueue courses a person may link an LMS course to: those they teach in LabQueue itself."""
    return Course.objects.filter(enrollments__user=user, enrollments__role=Role.INSTRUCTOR)


def assignment_for_link(*, course: Course, assignment_uuid: str) -> Assignment | None:
    """The deep-linked assignment, only if it belongs to the course the LMS course is linked to."""
    try:
        return Assignment.objects.filter(course=course, uuid=assignment_uuid).first()
    except ValidationError:  # not a UUID
        return None


def contexts_with_members(*, course: Course) -> list[LtiContext]:
    """The LMS courses linked to `course` whose launches gave a member list URL (NRPS)."""
    return list(LtiContext.objects.filter(course_link__course=course).exclude(memberships_url=""))
