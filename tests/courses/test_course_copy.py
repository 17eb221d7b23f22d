"""An instructor copies a course to a new term: its assignments (current scripts, parameters, starter files,
late policy), data sets, hints, policy and ceilings, and not its people, jobs, labs, usage or dates; the new
term needs a cluster account of its own. The copy runs the copied assignment on that account."""

import html
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from clusterpolicy.tasks import associations_reconcile
from courses.models import Assignment, Course, CourseCeiling, Enrollment, Hint, LabSession, Role
from courses.services import assignment_save
from jobs.models import Job, Status
from tests.behaviour_helpers import slurm
from tests.clusterpolicy.test_associations_slurm import restore_cs102
from tests.conftest import dispatch, job_row, submit_form, wait_for_status


def copy_form(**overrides) -> dict:
    data = {
        "code": "CS101",
        "title": "GPU Computing",
        "term": "Spring",
        "slug": "cs101-spring",
        "slurm_account": "cs101sp",
    }
    data.update(overrides)
    return data


def copy(client, **overrides):
    return client.post(reverse("courses:course-copy", args=["cs101"]), copy_form(**overrides))


@pytest.fixture
def last_term(course, instructor, student, assignment, dataset):
    """cs101 as a term leaves it: a starter file, a data set, hints, a due date, ceilings, a lab, a job."""
    assignment_save(
        course=course,
        fields={"due_at": timezone.now() - timedelta(days=3), "late_policy": "refuse", "grace_minutes": 10},
        datasets=[dataset],
        assignment=assignment,
        starter_file=SimpleUploadedFile("train.py", b"print('hi')\n"),
        actor=instructor,
    )
    Hint.objects.create(course=course, assignment=assignment, pattern="out of memory", message="Ask for less.")
    Hint.objects.create(course=course, state="TIMEOUT", message="Ask for more time.")
    CourseCeiling.objects.create(course=course, gpus_per_job=2, gpus_per_course=4)
    Course.objects.filter(pk=course.pk).update(gpu_hours_per_student=12, max_running_jobs_per_student=2)
    now = timezone.now()
    LabSession.objects.create(
        course=course, starts_at=now + timedelta(days=1), ends_at=now + timedelta(days=1, hours=2)
    )
    job_row(student, assignment, status=Status.COMPLETED)
    return course


def test_the_copy_page_previews_what_is_copied(client, instructor, last_term):
    client.force_login(instructor)
    page = html.unescape(client.get(reverse("courses:course-copy", args=["cs101"])).content.decode())
    assert "Assignments (1)" in page and "Hello GPU" in page and "train.py" in page and "Sample" in page
    assert "GPU-hours" in page or "Gpu hours per student" in page
    assert not Course.objects.exclude(pk=last_term.pk).exclude(slug="cs102").exists()


def test_a_copied_course_has_the_assignments_hints_and_policy_but_not_the_people_jobs_labs_or_dates(
    client, instructor, last_term
):
    client.force_login(instructor)
    response = copy(client)
    assert response.status_code == 302 and response["Location"] == reverse(
        "courses:course-detail", args=["cs101-spring"]
    )
    new = Course.objects.get(slug="cs101-spring")
    assert (new.term, new.slurm_account, new.partition) == ("Spring", "cs101sp", "gpu")
    assert (new.gpu_hours_per_student, new.max_running_jobs_per_student, new.max_gpus_per_job) == (12, 2, 2)
    assert (new.ceiling.gpus_per_job, new.ceiling.gpus_per_course) == (2, 4)
    old_assignment = last_term.assignments.get()
    copied = new.assignments.get()
    assert (copied.slug, copied.script_template, copied.parameters) == (
        "hello",
        old_assignment.script_template,
        old_assignment.parameters,
    )
    assert (copied.late_policy, copied.grace_minutes, copied.due_at, copied.opens_at) == ("refuse", 10, None, None)
    assert [d.name for d in copied.datasets.all()] == ["Sample"] and copied.datasets.get().course == new
    assert [f.name for f in copied.starter_files.all()] == ["train.py"]
    version = copied.versions.get()
    assert [f.name for f in version.starter_files.all()] == ["train.py"]
    assert set(Hint.objects.filter(course=new).values_list("assignment__slug", "message")) == {
        ("hello", "Ask for less."),
        (None, "Ask for more time."),
    }
    assert list(Enrollment.objects.filter(course=new).values_list("user__username", "role")) == [
        ("instructor1", Role.INSTRUCTOR)
    ]
    assert not LabSession.objects.filter(course=new).exists()
    assert not Job.objects.filter(assignment__course=new).exists()
    assert last_term.assignments.get().due_at is not None, "the old course is unchanged"


@pytest.mark.parametrize(
    "account, message",
    [
        ("cs101", "Another course already uses this cluster account"),
        ("CS102", "Another course already uses this cluster account"),
        ("root", "is the cluster's own top account"),
        ("bad name;", "Use letters, digits"),
    ],
)
def test_the_new_term_needs_a_cluster_account_of_its_own(client, instructor, last_term, other_course, account, message):
    client.force_login(instructor)
    response = copy(client, slurm_account=account)
    assert response.status_code == 400
    assert message in html.unescape(response.content.decode())
    assert not Course.objects.filter(slug="cs101-spring").exists()


def test_a_slug_in_use_is_refused_and_nothing_is_copied(client, instructor, last_term, other_course):
    client.force_login(instructor)
    response = copy(client, slug="cs102")
    assert response.status_code == 400
    assert Assignment.objects.count() == 1


def test_only_the_courses_instructors_copy_it(client, ta, student, outsider, last_term):
    for person, status in ((ta, 403), (student, 403), (outsider, 404)):
        client.force_login(person)
        assert client.get(reverse("courses:course-copy", args=["cs101"])).status_code == status
        assert copy(client).status_code == status
    client.logout()
    assert client.get(reverse("courses:course-copy", args=["cs101"])).status_code == 302
    assert not Course.objects.filter(slug="cs101-spring").exists()


@pytest.mark.slurm
def test_a_copied_course_runs_the_copied_assignment_on_its_new_cluster_account(client, instructor, student, assignment):
    """The lab's second account (cs102) stands for the new term's: the reconciliation sets it up as the copied
    policy says, the student's job of the copied assignment runs there, and cs102 is put back afterwards."""
    client.force_login(instructor)
    assert copy(client, slurm_account="cs102").status_code == 302
    new = Course.objects.get(slug="cs101-spring")
    Enrollment.objects.create(user=student, course=new, role=Role.STUDENT)
    try:
        associations_reconcile()
        client.force_login(student)
        url = reverse("jobs:assignment-detail", args=["cs101-spring", "hello"])
        assert client.post(url, submit_form()).status_code == 302
        job = wait_for_status(dispatch(Job.objects.get()), Status.COMPLETED)
    finally:
        restore_cs102()
    assert job.account == "cs102"
    assert slurm("sacct", "-n", "-X", "-P", "-o", "Account", "-j", job.slurm_job_id).strip() == "cs102"
    assert job.assignment_version.script_template == assignment.script_template
