"""The portal holds each student to the course policy before anything reaches Slurm."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, Status
from tests.conftest import job_row, make_user, submit_form


def post_job(client, user, **form):
    client.force_login(user)
    return client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form(**form))


def past_job(user, assignment, *, gpus: int, hours: float, status=Status.COMPLETED) -> Job:
    return job_row(
        user,
        assignment,
        gpus=gpus,
        minutes=60,
        status=status,
        elapsed_seconds=int(hours * 3600),
    )


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"gpus": "3"}, "This course allows at most 2 GPUs per job; you asked for 3."),
        ({"cpus": "5"}, "This course allows at most 4 CPUs per job; you asked for 5."),
        ({"mem_mb": "5000"}, "This course allows at most 4000 MB of memory per job; you asked for 5000 MB."),
        ({"minutes": "45"}, "This course allows at most 30 minutes per job; you asked for 45."),
    ],
)
def test_an_over_cap_request_is_refused_naming_the_limit_and_its_value(client, student, assignment, form, message):
    response = post_job(client, student, **form)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Job.objects.exists()


def test_a_request_at_every_cap_is_accepted(client, student, assignment):
    response = post_job(client, student, gpus="2", cpus="4", mem_mb="4000", minutes="30")
    assert response.status_code == 302
    assert Job.objects.get().gpus == 2


def test_a_student_with_the_most_jobs_waiting_or_running_is_refused(client, student, assignment, course):
    course.max_queued_jobs_per_student = 2
    course.save()
    past_job(student, assignment, gpus=1, hours=0, status=Status.PENDING)
    past_job(student, assignment, gpus=1, hours=0, status=Status.RUNNING)
    past_job(student, assignment, gpus=1, hours=0, status=Status.COMPLETED)
    response = post_job(client, student)
    assert response.status_code == 400
    assert "at most 2 jobs waiting or running per student; you have 2" in response.content.decode()
    assert Job.objects.count() == 3


def test_a_job_over_the_running_limit_is_accepted_and_told_it_will_wait(client, student, assignment, course):
    course.max_running_jobs_per_student = 1
    course.save()
    past_job(student, assignment, gpus=1, hours=0, status=Status.RUNNING)
    response = post_job(client, student)
    assert response.status_code == 302
    job = Job.objects.get(status=Status.QUEUED)
    assert job.events.get().cause == (
        "Submitted in the portal. This course runs at most 1 job per student at once and you have 1 in the "
        "cluster: this one waits until one of them ends."
    )


def test_a_job_under_the_running_limit_is_told_nothing_about_waiting(client, student, assignment, course):
    course.max_running_jobs_per_student = 2
    course.save()
    past_job(student, assignment, gpus=1, hours=0, status=Status.RUNNING)
    assert post_job(client, student).status_code == 302
    assert Job.objects.get(status=Status.QUEUED).events.get().cause == "Submitted in the portal."


def test_a_student_past_the_gpu_hour_budget_is_refused_with_used_and_remaining(client, student, assignment, course):
    course.gpu_hours_per_student = 3
    course.save()
    past_job(student, assignment, gpus=2, hours=1.0)
    past_job(student, assignment, gpus=1, hours=1.5)
    response = post_job(client, student)
    text = response.content.decode()
    assert response.status_code == 400
    assert (
        "Your GPU-hour budget for this course is spent: used 3.5 of 3 GPU-hours, 0.0 remaining. Jobs without GPUs "
        "can still run; ask your instructor if you need more." in text
    )
    assert "GPU-hour budget in CS101: used 3.5 of 3, 0.0 remaining." in text


def test_a_student_who_used_exactly_the_budget_is_refused_and_one_just_under_it_is_not(
    client, student, classmate, assignment, course
):
    course.gpu_hours_per_student = 2
    course.save()
    past_job(student, assignment, gpus=2, hours=1.0)  # 2 GPU-hours: all of it
    past_job(classmate, assignment, gpus=1, hours=1.99)
    refused = post_job(client, student)
    assert refused.status_code == 400
    assert "Your GPU-hour budget for this course is spent: used 2.0 of 2 GPU-hours, 0.0 remaining." in (
        refused.content.decode()
    )
    assert post_job(client, classmate).status_code == 302


def test_a_cpu_only_job_still_runs_with_the_budget_spent(client, student, assignment, course):
    course.gpu_hours_per_student = 1
    course.save()
    past_job(student, assignment, gpus=1, hours=2)
    assert post_job(client, student, gpus="0").status_code == 302


def test_budget_use_counts_only_the_students_own_jobs_in_the_course(client, student, classmate, assignment, course):
    course.gpu_hours_per_student = 10
    course.save()
    past_job(student, assignment, gpus=4, hours=1)
    past_job(classmate, assignment, gpus=4, hours=2)
    client.force_login(student)
    page = client.get(reverse("jobs:assignment-detail", args=["cs101", "hello"])).content.decode()
    assert "GPU-hour budget in CS101: used 4.0 of 10, 6.0 remaining." in page
    listing = client.get(reverse("jobs:job-list")).content.decode()
    assert "used 4.0 of 10, 6.0 remaining" in listing


def test_without_a_budget_no_budget_line_is_shown(client, student, assignment):
    client.force_login(student)
    assert b"GPU-hour budget" not in client.get(reverse("jobs:assignment-detail", args=["cs101", "hello"])).content


# --- The policy page ---

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


def policy_url() -> str:
    return reverse("courses:course-policy", args=["cs101"])


def test_an_instructor_sets_the_course_policy(client, instructor, course):
    client.force_login(instructor)
    assert client.get(policy_url()).status_code == 200
    response = client.post(policy_url(), POLICY)
    assert response.status_code == 302
    course.refresh_from_db()
    assert (course.max_gpus_per_job, course.gpu_hours_per_student, course.max_gpus_course) == (1, 10, 4)
    assert course.max_running_jobs_per_student == 2 and course.max_queued_jobs_per_student == 4


def test_operations_staff_may_set_any_course_policy(client, course):
    client.force_login(make_user("ops", "ops1", is_staff=True))
    assert client.post(policy_url(), POLICY).status_code == 302


def test_a_policy_an_assignment_does_not_fit_is_refused_naming_the_assignment(client, instructor, assignment):
    client.force_login(instructor)
    response = client.post(policy_url(), {**POLICY, "max_minutes_per_job": "3"})
    assert response.status_code == 400
    assert "“Hello GPU”: This course allows at most 3 minutes per job; it asks for 5." in response.content.decode()


def test_a_per_job_gpu_cap_above_the_course_wide_cap_is_refused(client, instructor, course):
    client.force_login(instructor)
    response = client.post(policy_url(), {**POLICY, "max_gpus_per_job": "2", "max_gpus_course": "1"})
    assert response.status_code == 400
    assert b"more GPUs than the whole course may use" in response.content


def test_a_ta_may_not_change_the_policy(client, ta):
    client.force_login(ta)
    assert client.get(policy_url()).status_code == 403
    assert client.post(policy_url(), POLICY).status_code == 403


def test_someone_outside_the_course_gets_404(client, outsider):
    client.force_login(outsider)
    assert client.get(policy_url()).status_code == 404


def test_the_policy_page_needs_a_login(client, course):
    response = client.get(policy_url())
    assert response.status_code == 302 and reverse("account_login") in response["Location"]


def test_the_policy_page_answers_only_get_and_post(client, instructor):
    client.force_login(instructor)
    assert client.put(policy_url()).status_code == 405


def test_a_request_is_refused_once_the_time_so_far_of_the_students_running_jobs_spends_the_budget(
    client, student, classmate, assignment, course
):
    course.gpu_hours_per_student = 2
    course.save()
    past_job(student, assignment, gpus=1, hours=0.5)
    running = past_job(student, assignment, gpus=1, hours=0, status=Status.RUNNING)
    Job.objects.filter(pk=running.pk).update(elapsed_seconds=None, started_at=timezone.now() - timedelta(hours=1.75))
    # a classmate's running job in the course is theirs, not the student's
    theirs = past_job(classmate, assignment, gpus=4, hours=0, status=Status.RUNNING)
    Job.objects.filter(pk=theirs.pk).update(elapsed_seconds=None, started_at=timezone.now() - timedelta(hours=5))

    refused = post_job(client, student)
    accepted = post_job(client, classmate, gpus="0")  # without GPUs the budget does not apply

    assert refused.status_code == 400
    assert "Your GPU-hour budget for this course is spent: used 2.3 of 2" in refused.content.decode()
    assert accepted.status_code == 302
    assert Job.objects.filter(user=student).count() == 2


def test_budget_use_includes_the_time_so_far_of_running_jobs(client, student, assignment, course):
    course.gpu_hours_per_student = 10
    course.save()
    past_job(student, assignment, gpus=1, hours=1)
    running = past_job(student, assignment, gpus=2, hours=0, status=Status.RUNNING)
    Job.objects.filter(pk=running.pk).update(elapsed_seconds=None, started_at=timezone.now() - timedelta(hours=1.5))
    client.force_login(student)
    page = client.get(reverse("jobs:assignment-detail", args=["cs101", "hello"])).content.decode()
    assert "GPU-hour budget in CS101: used 4.0 of 10, 6.0 remaining." in page
