"""LTI 1.3 launches from a real platform (tests/lms/platform.py): who is signed in, where they land, what rights
the LMS's claims give, and how every bad launch is refused with a page (4xx), never a 500."""

import pytest
from lti_tool.models import LtiDeployment

from courses.models import Enrollment, Role
from lms.models import CourseLink
from tests.lms.conftest import launch, path_of, start_launch
from tests.lms.platform import resigned, tampered


def signed_in_netid(client) -> str | None:
    user = client.get("/").wsgi_request.user
    return user.netid if user.is_authenticated else None


def link_course(client, platform, course) -> None:
    response, _ = launch(client, platform, netid="instructor1", roles=["Instructor"])
    assert response["Location"] == "/lms/link-course/"
    preview = client.get("/lms/link-course/", {"course": course.slug})
    assert b"Preview:" in preview.content and str(course).encode() in preview.content, preview.content.decode()
    assert not CourseLink.objects.exists()  # a preview changes nothing
    confirmed = client.post("/lms/link-course/", {"course": course.slug})
    assert confirmed.status_code == 302
    assert CourseLink.objects.get().course == course


def test_an_instructor_links_the_lms_course_after_a_preview(client, platform, course, instructor):
    link_course(client, platform, course)


def test_a_student_lands_on_the_course_signed_in_as_their_netid(client, platform, course, instructor, student):
    link_course(client, platform, course)
    client.logout()
    response, _ = launch(client, platform, netid="student1", roles=["Learner"])
    assert response.status_code == 302
    assert response["Location"] == f"/courses/{course.slug}/"
    assert signed_in_netid(client) == "student1"


def test_an_lms_learner_not_on_the_roster_becomes_a_student_of_the_linked_course_only(
    client, platform, course, instructor, outsider, other_course
):
    link_course(client, platform, course)
    client.logout()
    launch(client, platform, netid=outsider.netid, roles=["Learner"])
    assert set(Enrollment.objects.filter(user=outsider).values_list("course__slug", "role")) == {
        (other_course.slug, Role.STUDENT),
        (course.slug, Role.STUDENT),
    }
    outsider.refresh_from_db()
    assert not outsider.is_staff and not outsider.is_superuser


def test_an_instructor_claim_from_an_unlinked_context_gives_no_rights(client, platform, course, student):
    response, _ = launch(client, platform, netid="student1", roles=["Instructor"], context_id="someone-elses")
    assert response["Location"] == "/lms/link-course/"
    page = client.get("/lms/link-course/")
    assert b"You teach no course in LabQueue" in page.content
    client.post("/lms/link-course/", {"course": course.slug})
    assert not CourseLink.objects.exists()
    assert list(Enrollment.objects.filter(user=student).values_list("role", flat=True)) == [Role.STUDENT]
    assert client.get(f"/courses/{course.slug}/roster/").status_code in (403, 404)


def test_a_learner_from_an_unlinked_context_is_told_the_course_is_not_linked(client, platform, student):
    response, _ = launch(client, platform, netid="student1", roles=["Learner"])
    assert response.status_code == 200
    assert b"not linked to LabQueue yet" in response.content


def test_a_launch_without_the_campus_identity_signs_nobody_in(client, platform, student):
    response, _ = launch(client, platform, netid=None, roles=["Learner"], email="student1@example.edu")
    assert response.status_code == 403
    assert b"did not send your campus identity" in response.content
    assert signed_in_netid(client) is None


def test_a_netid_with_no_portal_account_gets_no_account(client, platform, django_user_model):
    response, _ = launch(client, platform, netid="newperson", roles=["Learner"])
    assert response.status_code == 403
    assert b"no account" in response.content
    assert not django_user_model.objects.filter(netid="newperson").exists()


def test_an_lms_never_signs_in_an_operator_account(client, platform, django_user_model):
    django_user_model.objects.create_user(username="op", netid="op1", is_staff=True)
    response, _ = launch(client, platform, netid="op1", roles=["Instructor"])
    assert response.status_code == 403
    assert signed_in_netid(client) is None


def test_a_replayed_id_token_is_refused(client, platform, student):
    redirect_uri, form = platform.authenticate(start_launch(client, platform), netid="student1", roles=["Learner"])
    assert client.post(path_of(redirect_uri), form).status_code == 200
    client.logout()
    replay = client.post(path_of(redirect_uri), form)
    assert replay.status_code == 403
    assert b"already used once" in replay.content
    assert signed_in_netid(client) is None


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            lambda platform, token: tampered(
                token, **{"https://purl.imsglobal.org/spec/lti/claim/custom": {"netid": "instructor1"}}
            ),
            b"signature",
        ),
        (lambda platform, token: resigned(platform, token, aud="another-tool"), b"not registered here"),
        (lambda platform, token: resigned(platform, token, exp=1), b"expired"),
        (
            lambda platform, token: resigned(platform, token, iss="https://other-lms.example.edu"),
            b"not registered here",
        ),
    ],
    ids=["tampered-signature", "wrong-audience", "expired", "wrong-issuer"],
)
def test_a_bad_id_token_is_refused_with_a_page(client, platform, student, instructor, change, words):
    redirect_uri, form = platform.authenticate(start_launch(client, platform), netid="student1", roles=["Learner"])
    form["id_token"] = change(platform, form["id_token"])
    response = client.post(path_of(redirect_uri), form)
    assert response.status_code == 403
    assert words in response.content
    assert signed_in_netid(client) is None


def test_an_unknown_deployment_is_refused(client, platform, student):
    platform.registration.set_deployment_id("never-registered")
    response, _ = launch(client, platform, netid="student1", roles=["Learner"])
    assert response.status_code == 403
    assert b"not switched on" in response.content


def test_an_inactive_deployment_is_refused(client, platform, student):
    LtiDeployment.objects.update(is_active=False)
    response, _ = launch(client, platform, netid="student1", roles=["Learner"])
    assert response.status_code == 403
    assert b"not switched on" in response.content


def test_a_missing_state_cookie_gets_a_page_with_a_new_tab_link(client, platform, student):
    redirect_uri, form = platform.authenticate(start_launch(client, platform), netid="student1", roles=["Learner"])
    client.cookies.clear()
    response = client.post(path_of(redirect_uri), form)
    assert response.status_code == 400
    assert b'target="_blank"' in response.content and b"new tab" in response.content


def test_login_initiation_without_a_target_is_a_400_page(client, platform):
    assert client.get("/lms/login/", {"iss": "https://lms.example.edu", "login_hint": "x"}).status_code == 400


def test_login_initiation_from_an_unknown_lms_is_a_400_page(client, platform):
    response = client.get(
        "/lms/login/",
        {"iss": "https://unknown.example.edu", "login_hint": "x", "target_link_uri": "http://testserver/lms/launch/"},
    )
    assert response.status_code == 400


def test_the_launch_takes_post_only(client, platform):
    assert client.get("/lms/launch/").status_code == 405


def test_a_launch_before_the_tool_has_a_key_is_a_page_that_says_so(client, platform):
    from lti_tool.models import Key

    Key.objects.all().delete()
    response = client.get(path_of(platform.login_initiation_url("someone")))
    assert response.status_code == 503
    assert b"rotate_keys" in response.content


def test_a_launch_when_the_lms_keys_cannot_be_fetched_is_a_page_that_says_so(client, platform, student):
    from lti_tool.models import LtiRegistration

    redirect_uri, form = platform.authenticate(start_launch(client, platform), netid="student1", roles=["Learner"])
    LtiRegistration.objects.update(keyset_url="http://127.0.0.1:1/jwks")
    response = client.post(path_of(redirect_uri), form)
    assert response.status_code == 403
    assert b"could not fetch the LMS" in response.content
