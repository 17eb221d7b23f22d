"""Instructors schedule lab sessions; overlapping labs that need more nodes than exist are refused."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from clusterpolicy.selectors import lab_reservation_for
from courses.models import LabSession
from jobs.models import Status
from tests.conftest import job_row

SOON = timezone.now().replace(second=0, microsecond=0) + timedelta(days=1)


def lab_form(start, minutes=60, nodes=1) -> dict:
    fmt = "%Y-%m-%dT%H:%M"
    return {
        "starts_at": start.strftime(fmt),
        "ends_at": (start + timedelta(minutes=minutes)).strftime(fmt),
        "nodes": str(nodes),
    }


def labs_url(slug="cs101") -> str:
    return reverse("courses:lab-list", args=[slug])


@pytest.fixture(autouse=True)
def utc(settings):
    settings.TIME_ZONE = "UTC"


def test_an_instructor_schedules_a_lab(client, instructor, course):
    client.force_login(instructor)
    response = client.post(labs_url(), lab_form(SOON, nodes=2))
    assert response.status_code == 302
    session = LabSession.objects.get()
    assert (session.course, session.nodes, session.state) == (course, 2, LabSession.State.SCHEDULED)
    assert session.ends_at - session.starts_at == timedelta(minutes=60)
    assert b"Scheduled" in client.get(labs_url()).content


def test_an_overlapping_lab_that_needs_more_nodes_than_exist_is_refused_with_the_reason(
    client, instructor, course, other_course
):
    LabSession.objects.create(
        course=other_course, starts_at=SOON + timedelta(minutes=30), ends_at=SOON + timedelta(minutes=90), nodes=2
    )
    client.force_login(instructor)
    response = client.post(labs_url(), lab_form(SOON, nodes=1))
    assert response.status_code == 400
    text = response.content.decode()
    assert "other labs (CS102) already reserve 2 of the 2 reservable nodes; this lab asks for 1 more." in text
    assert LabSession.objects.count() == 1


def test_labs_one_after_the_other_both_fit(client, instructor, course, other_course):
    LabSession.objects.create(course=other_course, starts_at=SOON - timedelta(minutes=60), ends_at=SOON, nodes=2)
    client.force_login(instructor)
    assert client.post(labs_url(), lab_form(SOON, nodes=2)).status_code == 302


def test_a_cancelled_lab_frees_its_nodes(client, instructor, course, other_course):
    LabSession.objects.create(
        course=other_course,
        starts_at=SOON,
        ends_at=SOON + timedelta(hours=1),
        nodes=2,
        state=LabSession.State.CANCELLED,
    )
    client.force_login(instructor)
    assert client.post(labs_url(), lab_form(SOON, nodes=2)).status_code == 302


def test_a_lab_larger_than_the_cluster_is_refused(client, instructor, course):
    client.force_login(instructor)
    response = client.post(labs_url(), lab_form(SOON, nodes=3))
    assert "The cluster has 2 reservable nodes; this lab asks for 3." in response.content.decode()


def test_a_lab_that_ends_before_it_starts_is_refused(client, instructor, course):
    client.force_login(instructor)
    response = client.post(labs_url(), lab_form(SOON, minutes=-30))
    assert response.status_code == 400 and b"must end after it starts" in response.content


def test_an_instructor_cancels_a_lab(client, instructor, course):
    session = LabSession.objects.create(course=course, starts_at=SOON, ends_at=SOON + timedelta(hours=1))
    client.force_login(instructor)
    response = client.post(reverse("courses:lab-cancel", args=["cs101", session.uuid]))
    assert response.status_code == 302
    session.refresh_from_db()
    assert session.state == LabSession.State.CANCELLED


def test_another_courses_lab_cannot_be_cancelled_from_this_course(client, instructor, course, other_course):
    session = LabSession.objects.create(course=other_course, starts_at=SOON, ends_at=SOON + timedelta(hours=1))
    client.force_login(instructor)
    assert client.post(reverse("courses:lab-cancel", args=["cs101", session.uuid])).status_code == 404


def test_a_ta_may_not_schedule_labs(client, ta):
    client.force_login(ta)
    assert client.get(labs_url()).status_code == 403
    assert client.post(labs_url(), lab_form(SOON)).status_code == 403


def test_lab_pages_are_404_outside_the_course_and_need_a_login(client, outsider, course):
    assert client.get(labs_url()).status_code == 302
    client.force_login(outsider)
    assert client.get(labs_url()).status_code == 404


def test_lab_pages_answer_only_their_methods(client, instructor, course):
    session = LabSession.objects.create(course=course, starts_at=SOON, ends_at=SOON + timedelta(hours=1))
    client.force_login(instructor)
    assert client.put(labs_url()).status_code == 405
    assert client.get(reverse("courses:lab-cancel", args=["cs101", session.uuid])).status_code == 405


def test_students_see_when_the_next_lab_is(client, student, course, assignment):
    LabSession.objects.create(course=course, starts_at=SOON, ends_at=SOON + timedelta(hours=2))
    client.force_login(student)
    start, end = timezone.localtime(SOON), timezone.localtime(SOON + timedelta(hours=2))
    expected = (
        f'Next lab session: <time datetime="{start.isoformat()}">{start:%Y-%m-%d %H:%M %Z}</time> to '
        f'<time datetime="{end.isoformat()}">{end:%Y-%m-%d %H:%M %Z}</time>'
    )
    assert expected in client.get(reverse("courses:course-detail", args=["cs101"])).content.decode()
    assert expected in client.get(reverse("jobs:assignment-detail", args=["cs101", "hello"])).content.decode()


def test_students_see_that_a_lab_is_on_now(client, student, course):
    now = timezone.now()
    LabSession.objects.create(
        course=course,
        starts_at=now - timedelta(minutes=5),
        ends_at=now + timedelta(hours=1),
        state=LabSession.State.RESERVED,
        reservation_active=True,
        reservation_name="lq-cs101-1",
    )
    client.force_login(student)
    assert b"Lab session on now" in client.get(reverse("courses:course-detail", args=["cs101"])).content


def test_the_job_page_says_the_job_runs_under_the_lab_reservation(client, student, assignment):
    job = job_row(
        student,
        assignment,
        gpus=1,
        minutes=5,
        status=Status.RUNNING,
        reservation="lq-cs101-7",
    )
    client.force_login(student)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "Running under the lab reservation <code>lq-cs101-7</code>" in page


def test_only_jobs_that_end_before_the_lab_does_go_to_its_reservation(course):
    now = timezone.now()
    LabSession.objects.create(
        course=course,
        starts_at=now - timedelta(minutes=5),
        ends_at=now + timedelta(minutes=30),
        state=LabSession.State.RESERVED,
        reservation_active=True,
        reservation_name="lq-cs101-1",
    )
    assert lab_reservation_for(course=course, minutes=20) == "lq-cs101-1"
    assert lab_reservation_for(course=course, minutes=45) == ""


def test_the_same_lab_scheduled_twice_is_the_one_lab(client, instructor, course):
    client.force_login(instructor)
    first = client.post(labs_url(), lab_form(SOON, nodes=1))
    second = client.post(labs_url(), lab_form(SOON, nodes=1))  # a double click or a reload of the POST

    assert first.status_code == second.status_code == 302
    assert LabSession.objects.filter(course=course).count() == 1
    later = client.post(labs_url(), lab_form(SOON + timedelta(hours=2), nodes=1))
    assert later.status_code == 302, "a different lab is another lab"
    assert LabSession.objects.filter(course=course).count() == 2
