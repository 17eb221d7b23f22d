"""The gradebook page of a course linked to an LMS says, per student, when their score was sent to the LMS or
what the LMS answered; in a constant number of queries however many students; no column for an unlinked course."""

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from lti_tool.models import LtiContext, LtiDeployment, LtiRegistration

from courses.models import Enrollment, Role
from lms.models import CourseLink, ScorePost, ScoreStatus
from tests.conftest import make_user

PAGE = "/jobs/course/cs101/gradebook/hello/"


@pytest.fixture
def lms_course(course, instructor):
    registration = LtiRegistration.objects.create(name="LMS", issuer="https://lms.example.edu", client_id="c")
    deployment = LtiDeployment.objects.create(registration=registration, deployment_id="d", is_active=True)
    context = LtiContext.objects.create(deployment=deployment, id_on_platform="lms-course-1", title="LMS CS101")
    CourseLink.objects.create(context=context, course=course, linked_by=instructor)
    return context


def post(user, assignment, context, **fields) -> ScorePost:
    return ScorePost.objects.create(user=user, assignment=assignment, context=context, **fields)


def test_each_student_s_cell_says_when_the_score_was_sent_or_what_the_lms_answered(
    client, lms_course, instructor, student, classmate, assignment
):
    post(
        student,
        assignment,
        lms_course,
        status=ScoreStatus.SENT,
        score=Decimal("7.50"),
        max_score=Decimal("10"),
        sent_at=timezone.now(),
    )
    post(classmate, assignment, lms_course, status=ScoreStatus.FAILED, answer="The LMS did not take the score: 503")
    client.force_login(instructor)
    page = client.get(PAGE).content.decode()
    assert "Sent to the LMS" in page
    assert "7.5 / 10 sent <time" in page
    assert "not taken: The LMS did not take the score: 503" in page


def test_a_student_with_nothing_sent_yet_is_said_so(client, lms_course, instructor, student, assignment):
    client.force_login(instructor)
    assert "not sent yet" in client.get(PAGE).content.decode()


def test_a_course_not_linked_to_an_lms_has_no_lms_column(client, instructor, student, assignment):
    client.force_login(instructor)
    page = client.get(PAGE).content.decode()
    assert "Sent to the LMS" not in page and "not sent yet" not in page


def test_the_page_asks_the_same_number_of_queries_for_one_student_as_for_many(
    client, lms_course, course, instructor, student, assignment, django_assert_num_queries
):
    post(
        student,
        assignment,
        lms_course,
        status=ScoreStatus.SENT,
        score=Decimal("5"),
        max_score=Decimal("10"),
        sent_at=timezone.now(),
    )
    client.force_login(instructor)
    with CaptureQueriesContext(connection) as one_student:
        assert client.get(PAGE).status_code == 200
    for n in range(8):
        user = Enrollment.objects.create(user=make_user(f"many{n}", f"many{n}"), course=course, role=Role.STUDENT).user
        post(user, assignment, lms_course, status=ScoreStatus.NOT_SENT, answer="Not launched yet.")
    with django_assert_num_queries(len(one_student.captured_queries)):
        page = client.get(PAGE).content.decode()
    assert page.count("not sent: Not launched yet.") == 8
