"""Roster from the LMS (NRPS): the platform's member list becomes the course's roster through the CSV import's
preview, rules and confirmation; a member without a campus identity is listed, not created."""

import pytest
from lti_tool.models import LtiRegistration

from courses.models import Enrollment, Role
from tests.lms.conftest import path_of, start_launch
from tests.lms.test_launch import link_course

CUSTOM = "https://purl.imsglobal.org/spec/lti/claim/custom"
ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#{}"
TEACHING_ASSISTANT = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
ROSTER = "/lms/courses/cs101/roster/"


def member(user_id: str, role: str, netid: str | None = None, **fields) -> dict:
    message = [{CUSTOM: {"netid": netid}}] if netid else []
    role = role if role.startswith("http") else ROLE.format(role)
    return {"user_id": user_id, "name": user_id.title(), "roles": [role], "message": message, **fields}


@pytest.fixture
def synced_course(client, platform, course, instructor, student, classmate):
    link_course(client, platform, course)
    platform.trust_tool(client.get("/lms/jwks.json").json())
    platform.members = [
        member("u-instructor", "Instructor", "instructor1"),
        member("u-classmate", TEACHING_ASSISTANT, "student2"),
        member("u-new", "Learner", "newstudent3", email="new3@example.edu"),
        member("u-student", "Learner", "student1", status="Inactive"),
        member("u-anonymous", "Learner"),
    ]
    return course


def roles(course) -> dict[str, str]:
    return dict(Enrollment.objects.filter(course=course).values_list("user__netid", "role"))


def test_the_lms_roster_is_previewed_then_applied_with_adds_role_changes_and_drops(
    client, platform, synced_course, django_user_model
):
    before = roles(synced_course)
    preview = client.get(ROSTER)
    page = preview.content.decode()
    assert preview.status_code == 200
    assert "newstudent3" in page and "student to ta" in page and "student1" in page
    assert "U-Anonymous: no campus identity" in page
    assert roles(synced_course) == before  # a preview changes nothing
    assert any(path.startswith("/memberships?rlid=") for path in platform.requests)  # with a token the LMS checked

    digest = page.split('name="digest" value="')[1].split('"')[0]
    applied = client.post(ROSTER, {"digest": digest})
    assert applied.status_code == 302
    assert roles(synced_course) == {"instructor1": Role.INSTRUCTOR, "student2": Role.TA, "newstudent3": Role.STUDENT}
    assert not django_user_model.objects.filter(username__icontains="anonymous").exists()
    assert django_user_model.objects.get(netid="newstudent3").has_usable_password() is False


def test_a_roster_that_changed_in_the_lms_since_the_preview_is_not_applied(client, platform, synced_course):
    digest = client.get(ROSTER).content.decode().split('name="digest" value="')[1].split('"')[0]
    platform.members = platform.members[:1]
    before = roles(synced_course)
    response = client.post(ROSTER, {"digest": digest})
    assert response.status_code == 200 and b"changed since the preview" in response.content
    assert roles(synced_course) == before


def test_an_lms_that_does_not_answer_changes_nothing_and_says_so(client, platform, synced_course):
    LtiRegistration.objects.update(token_url="http://127.0.0.1:1/token")
    before = roles(synced_course)
    response = client.get(ROSTER)
    assert response.status_code == 502
    assert b"The LMS did not give the course" in response.content
    assert roles(synced_course) == before


def test_only_the_courses_instructors_sync_its_roster(client, platform, synced_course, student, outsider):
    client.force_login(student)
    assert client.get(ROSTER).status_code == 403
    client.force_login(outsider)
    assert client.get(ROSTER).status_code == 404
    client.logout()
    assert client.get(ROSTER).status_code == 302


def test_a_course_not_linked_to_an_lms_course_has_no_roster_from_it(client, course, instructor):
    client.force_login(instructor)
    response = client.get(ROSTER)
    assert response.status_code == 409
    assert b"no linked LMS course" in response.content


def test_a_member_without_the_claim_is_known_by_an_earlier_verified_launch(client, platform, synced_course):
    redirect_uri, form = platform.authenticate(
        start_launch(client, platform, login_hint="u-anonymous"), netid="student1", roles=["Learner"]
    )
    client.post(path_of(redirect_uri), form)
    client.force_login(synced_course.enrollments.get(role=Role.INSTRUCTOR).user)
    page = client.get(ROSTER).content.decode()
    assert "no campus identity" not in page  # u-anonymous is student1, who launched as that LMS user
    assert "<code>student1</code> (student)" not in page  # so student1 is not dropped


def test_a_roster_before_the_tool_has_a_key_is_a_page_that_says_so(client, platform, synced_course):
    from lti_tool.models import Key

    Key.objects.all().delete()
    response = client.get(ROSTER)
    assert response.status_code == 502 and b"rotate_keys" in response.content
