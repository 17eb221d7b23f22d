"""Deep linking: an instructor picks a LabQueue assignment in the LMS's dialog; students who follow the link the
LMS then holds land on that assignment, signed in as their netid."""

import re
from html import unescape

from tests.lms.conftest import launch, path_of
from tests.lms.test_launch import link_course, signed_in_netid


def test_a_student_lands_on_the_deep_linked_assignment_signed_in_as_their_netid(
    client, platform, course, instructor, student, assignment
):
    link_course(client, platform, course)
    response, _ = launch(client, platform, netid="instructor1", roles=["Instructor"], deep_linking=True)
    assert response["Location"] == "/lms/deep-link/"
    dialog = client.get("/lms/deep-link/")
    assert assignment.title.encode() in dialog.content
    returned = client.post("/lms/deep-link/", {"assignment": str(assignment.uuid)})
    page = returned.content.decode()
    [return_url] = re.findall(r'action="([^"]+)" id="deep-link-return"', page)
    [jwt] = re.findall(r'name="JWT" value="([^"]+)"', page)
    assert unescape(return_url) == f"{platform.base}/deep-link-return"
    [item] = platform.deep_link_items(unescape(jwt), client.get("/lms/jwks.json").json())
    assert item["type"] == "ltiResourceLink" and item["url"] == "http://testserver/lms/launch/"

    client.logout()
    response, _ = launch(client, platform, netid="student1", roles=["Learner"], custom=item["custom"])
    assert response.status_code == 302
    assert response["Location"] == f"/courses/{course.slug}/assignments/{assignment.slug}/"
    assert signed_in_netid(client) == "student1"
    assert client.get(path_of(response["Location"])).status_code == 200


def test_a_learner_cannot_open_the_deep_linking_dialog(client, platform, course, instructor, student):
    link_course(client, platform, course)
    client.logout()
    response, _ = launch(client, platform, netid="student1", roles=["Learner"], deep_linking=True)
    assert response.status_code == 403
    assert client.get("/lms/deep-link/").status_code == 400


def test_a_deep_link_to_another_courses_assignment_leads_to_the_linked_course_only(
    client, platform, course, instructor, student, other_course
):
    link_course(client, platform, course)
    elsewhere = other_course.assignments.create(slug="secret", title="Secret", script_template="echo hi")
    client.logout()
    response, _ = launch(
        client, platform, netid="student1", roles=["Learner"], custom={"labqueue_assignment": str(elsewhere.uuid)}
    )
    assert response["Location"] == f"/courses/{course.slug}/"


def test_the_deep_linking_dialog_needs_a_sign_in(client):
    assert client.get("/lms/deep-link/").status_code == 302
