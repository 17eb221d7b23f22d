"""An instructor's course policy stays within what operations staff granted: the site-wide ceilings
(LABQUEUE_CEILING_*), the QOS and partition allow-lists (LABQUEUE_ALLOWED_*), or the course's own ceilings
that only operations staff set in the Django admin. Every attack is a real POST to the policy page."""

import html

import pytest
from django.urls import reverse

from courses import models
from courses.models import Course
from jobs.models import Job
from tests.conftest import make_user, submit_form
from tests.security.conftest import site_ceilings_set

POLICY = {
    "max_gpus_per_job": "1",
    "max_cpus_per_job": "4",
    "max_mem_mb_per_job": "4000",
    "max_minutes_per_job": "30",
    "max_running_jobs_per_student": "2",
    "max_queued_jobs_per_student": "4",
    "gpu_hours_per_student": "10",
    "max_gpus_course": "4",
    "partition": "gpu",
    "qos": "",
}
WHO_TO_ASK = "Only operations staff can raise it: ask hpc-help@example.edu."


@pytest.fixture(autouse=True)
def site_ceilings(settings):
    site_ceilings_set(settings, allowed_qos=["coursework"])
    settings.LABQUEUE_ALLOWED_PARTITIONS = ["gpu"]
    settings.LABQUEUE_OPERATIONS_CONTACT = "hpc-help@example.edu"


def policy_url() -> str:
    return reverse("courses:course-policy", args=["cs101"])


def post_policy(client, user, **changes):
    client.force_login(user)
    return client.post(policy_url(), {**POLICY, **changes})


def page(response) -> str:
    return html.unescape(response.content.decode())


def saved(course: Course) -> dict:
    return {name: getattr(Course.objects.get(pk=course.pk), name) for name in POLICY}


def test_an_instructor_cannot_give_students_32000_gpus_per_job(client, instructor, course):
    before = saved(course)
    response = post_policy(client, instructor, max_gpus_per_job="32000", max_gpus_course="32000")
    assert response.status_code == 400
    text = page(response)
    assert (
        "This course may allow at most 4 GPUs per job (a ceiling set by operations staff); the policy asks for 32000."
    ) in text
    assert "at most 8 GPUs for the whole course at once" in text
    assert WHO_TO_ASK in text
    assert saved(course) == before, "nothing of the refused policy is saved"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_cpus_per_job", "64", "at most 32 CPUs per job"),
        ("max_mem_mb_per_job", "500000", "at most 128000 MB of memory per job"),
        ("max_minutes_per_job", "100000", "at most 1440 minutes per job"),
        ("max_running_jobs_per_student", "500", "at most 20 running jobs per student"),
        ("max_queued_jobs_per_student", "500", "at most 20 waiting or running jobs per student"),
        ("gpu_hours_per_student", "100000", "at most 100 GPU-hours per student"),
    ],
)
def test_an_instructor_cannot_raise_a_limit_above_the_site_ceiling(client, instructor, course, field, value, message):
    before = saved(course)
    response = post_policy(client, instructor, **{field: value})
    assert response.status_code == 400
    assert message in page(response) and WHO_TO_ASK in page(response)
    assert saved(course) == before


def test_an_instructor_cannot_lift_a_capped_limit_by_leaving_it_empty(client, instructor, course):
    response = post_policy(client, instructor, gpu_hours_per_student="", max_gpus_course="")
    assert response.status_code == 400
    text = page(response)
    assert "Operations staff set a ceiling of 100 GPU-hours per student for this course" in text
    assert "Operations staff set a ceiling of 8 GPUs for the whole course at once" in text
    assert Course.objects.get(pk=course.pk).gpu_hours_per_student is None, "unchanged"


def test_an_instructor_cannot_pick_a_qos_operations_staff_did_not_allow(client, instructor, course):
    response = post_policy(client, instructor, qos="admin-priority")
    assert response.status_code == 400
    assert (
        "The QOS “admin-priority” is not one operations staff allow for this course (allowed: coursework; "
        "leave it empty for the site's default)."
    ) in page(response)
    assert Course.objects.get(pk=course.pk).qos == ""
    assert post_policy(client, instructor, qos="coursework").status_code == 302, "an allowed QOS is fine"


def test_an_instructor_cannot_pick_a_partition_operations_staff_did_not_allow(client, instructor, course):
    response = post_policy(client, instructor, partition="bigmem")
    assert response.status_code == 400
    assert "The partition “bigmem” is not one operations staff allow for this course (allowed: gpu;" in page(response)
    assert Course.objects.get(pk=course.pk).partition == "gpu"


def test_operations_staff_acting_as_instructor_on_the_policy_page_are_held_to_the_ceiling_too(client, course):
    ops = make_user("ops", "ops1", is_staff=True)
    assert post_policy(client, ops, max_gpus_per_job="5", max_gpus_course="8").status_code == 400


def test_an_instructor_cannot_set_a_course_ceiling_in_the_admin(client, instructor, course):
    client.force_login(instructor)
    response = client.post(reverse("admin:courses_courseceiling_add"), {"course": course.pk, "gpus_per_job": "32000"})
    assert response.status_code == 302 and reverse("admin:login") in response["Location"]
    assert not models.CourseCeiling.objects.exists()


def test_staff_without_the_ceiling_permission_cannot_set_one_in_the_admin(client, course):
    client.force_login(make_user("helpdesk", "helpdesk1", is_staff=True))
    response = client.post(reverse("admin:courses_courseceiling_add"), {"course": course.pk, "gpus_per_job": "8"})
    assert response.status_code == 403
    assert not models.CourseCeiling.objects.exists()


def test_a_course_ceiling_operations_staff_set_in_the_admin_lets_the_instructor_go_that_high(
    client, instructor, course
):
    client.force_login(make_user("root", "root1", is_staff=True, is_superuser=True))
    response = client.post(
        reverse("admin:courses_courseceiling_add"),
        {"course": course.pk, "gpus_per_job": "8", "allowed_qos": "coursework, lab-priority", "allowed_partitions": ""},
    )
    assert response.status_code == 302
    assert models.CourseCeiling.objects.get(course=course).gpus_per_job == 8

    wider = {"max_gpus_per_job": "8", "max_gpus_course": "8", "qos": "lab-priority"}
    assert post_policy(client, instructor, **wider).status_code == 302
    course.refresh_from_db()
    assert (course.max_gpus_per_job, course.qos) == (8, "lab-priority")
    response = post_policy(client, instructor, **{**wider, "max_gpus_per_job": "9"})
    assert "at most 8 GPUs per job" in page(response)
    assert post_policy(client, instructor, partition="gpu").status_code == 302, "the site's partitions still apply"


def test_a_course_row_written_beyond_the_ceiling_does_not_let_a_student_ask_for_more(
    client, student, course, assignment
):
    Course.objects.filter(pk=course.pk).update(max_gpus_per_job=32000, max_gpus_course=32000)
    client.force_login(student)
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form(gpus="8"))
    assert response.status_code == 400
    assert "This course allows at most 4 GPUs per job; you asked for 8." in page(response)
    assert not Job.objects.exists()


def test_a_limit_without_a_ceiling_leaves_the_ceilings_of_the_limits_after_it_in_force(client, instructor, settings):
    settings.LABQUEUE_CEILING_JOBS_PER_STUDENT = 0  # no ceiling on jobs per student; GPU-hours come after it

    response = post_policy(client, instructor, max_running_jobs_per_student="500", gpu_hours_per_student="100000")

    assert response.status_code == 400
    text = page(response)
    assert "at most 100 GPU-hours per student" in text and "at most 20 running jobs per student" not in text


@pytest.mark.parametrize(
    ("allowed", "listed"), [(["coursework", "lab-priority"], "coursework, lab-priority"), ([], "none")]
)
def test_a_refused_qos_names_every_allowed_one_or_says_none_is(client, instructor, settings, allowed, listed):
    settings.LABQUEUE_ALLOWED_QOS = allowed

    response = post_policy(client, instructor, qos="admin-priority")

    assert response.status_code == 400
    assert f"The QOS “admin-priority” is not one operations staff allow for this course (allowed: {listed};" in page(
        response
    )
