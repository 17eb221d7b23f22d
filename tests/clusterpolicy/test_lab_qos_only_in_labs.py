"""Which QOS a job is sent with. The site's lab QOS (LABQUEUE_LAB_QOS, which may preempt research work) goes with a
job only inside a lab: any other job is sent with its course's QOS, so a site with preemption does not let every
course job preempt research; and a course's own QOS, granted to its students by the association reconciliation,
reaches sbatch."""

import pytest
from django.urls import reverse

from clusterpolicy.associations import associations_reconcile
from courses.models import Assignment, Course, Enrollment, Role
from jobs.models import Job, Status
from tests.behaviour_helpers import account_deleted, slurm, slurm_cleanup, wait_until
from tests.conftest import ECHO_SCRIPT, PARAMETERS, cancel_jobs_under, dispatch, make_user, submit_form

pytestmark = pytest.mark.slurm

COURSE_ACCOUNT = "lqcourseqos"  # made by the reconciliation here, removed at the end


def sent_qos(job: Job) -> list[str]:
    return slurm("squeue", "-h", "-t", "all", "-j", job.slurm_job_id, "-o", "%q").split()


def test_outside_a_lab_a_job_is_sent_with_its_courses_qos_where_the_site_has_a_lab_qos(
    client, settings, student, assignment
):
    settings.LABQUEUE_LAB_QOS = "coursework"
    client.force_login(student)
    with slurm_cleanup():
        assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
        job = dispatch(Job.objects.get())

        assert job.status == Status.PENDING and job.reservation == ""
        assert sent_qos(job) == ["normal"], "the course's QOS (none set: the association's default), not the lab's"


@pytest.fixture
def own_account(db, job_root):
    """The course's own Slurm account; its jobs cancelled and the account removed at the end, even on failure."""
    try:
        yield COURSE_ACCOUNT
    finally:
        cancel_jobs_under(job_root)
        # Slurm keeps an account while jobs of it are still in the queue ("Job(s) active").
        wait_until(lambda: account_deleted(COURSE_ACCOUNT), timeout=60, what=f"account {COURSE_ACCOUNT} gone")


def test_a_job_is_sent_with_the_qos_its_course_has_and_its_students_were_granted(client, settings, own_account):
    settings.LABQUEUE_LAB_QOS = ""
    settings.LABQUEUE_COURSE_QOS = ""
    settings.LABQUEUE_ALLOWED_QOS = ["coursework"]
    course = Course.objects.create(
        slug="course-qos",
        code="CS191",
        title="QOS",
        term="Fall",
        slurm_account=own_account,
        partition="gpu",
        qos="coursework",
    )
    Assignment.objects.create(
        course=course, slug="hello", title="Hello", script_template=ECHO_SCRIPT, parameters=PARAMETERS, gpus=0
    )
    student = make_user("student4", "student4")
    Enrollment.objects.create(user=student, course=course, role=Role.STUDENT)
    run = associations_reconcile(course_slugs=[course.slug], trigger="test")
    assert not run.errors, run.errors
    granted = slurm("sacctmgr", "-n", "-P", "show", "assoc", f"account={own_account}", "user=student4", "format=qos")
    assert "coursework" in granted.split(","), "the reconciliation lets the course's students use its QOS"

    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=[course.slug, "hello"]), submit_form()).status_code == 302
    job = dispatch(Job.objects.get())

    assert job.slurm_job_id and job.reservation == ""
    assert sent_qos(job) == ["coursework"], "the course's own QOS, not the association's default (normal)"
