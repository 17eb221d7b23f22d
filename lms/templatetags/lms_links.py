"""The course page's link to its roster from the LMS, when the course is linked to one (courses does not import
lms). Web side; one query."""

from django import template

from lms.selectors import contexts_with_members

register = template.Library()


@register.inclusion_tag("lms/_roster_link.html")
def lms_roster_link(course) -> dict:
    """For the course's instructors (the page asks for it then): a link to the LMS roster page."""
    return {"course": course, "linked": bool(contexts_with_members(course=course))}
