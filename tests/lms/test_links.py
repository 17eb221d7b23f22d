"""Where people find the LMS pages: a linked course's page links its instructors to the roster from the LMS; the
operators' usage overview links to the LMS setup page."""

from lti_tool.models import LtiContext, LtiDeployment, LtiRegistration

from lms.models import CourseLink
from tests.conftest import make_user

COURSE = "/courses/cs101/"


def link(course, instructor) -> None:
    registration = LtiRegistration.objects.create(name="LMS", issuer="https://lms.example.edu", client_id="c")
    deployment = LtiDeployment.objects.create(registration=registration, deployment_id="d", is_active=True)
    context = LtiContext.objects.create(
        deployment=deployment, id_on_platform="1", memberships_url="https://lms.example.edu/memberships"
    )
    CourseLink.objects.create(context=context, course=course, linked_by=instructor)


def test_a_linked_course_s_page_links_its_instructors_to_the_roster_from_the_lms(client, course, instructor, ta):
    client.force_login(instructor)
    assert b'id="lms-roster"' not in client.get(COURSE).content  # not linked yet
    link(course, instructor)
    assert b'href="/lms/courses/cs101/roster/"' in client.get(COURSE).content
    client.force_login(ta)  # the roster page is the instructors'
    assert b'id="lms-roster"' not in client.get(COURSE).content


def test_the_operators_usage_overview_links_to_the_lms_setup_page(client, db):
    client.force_login(make_user("operator", is_staff=True))
    assert b'href="/lms/setup/"' in client.get("/reports/").content
