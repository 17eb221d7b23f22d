"""What jobs that really ran on the lab cluster used, through the real worker path (submit, dispatch, sync):
a job that keeps one of its four CPUs busy and holds little memory gets the right figures and a smaller request,
prefilled on its resubmit page; a job that uses what it asked for gets none; a job waiting behind a course whose
GPUs are all in use says so in plain words (and when Slurm expects it to start, when Slurm says)."""

import re
import time

import pytest
from django.urls import reverse

from clusterpolicy.associations import associations_reconcile
from courses.models import Assignment, Course, Enrollment, Role
from jobs.efficiency import job_use
from jobs.models import Job, Status
from jobs.tasks import job_dispatch
from tests.behaviour_helpers import restore_cs102, slurm_cleanup
from tests.conftest import PARAMETERS, make_user, submit_form, wait_for_status

pytestmark = pytest.mark.slurm

#: Holds about 50 MB and keeps one CPU busy for 5 s of CPU time (however long the shared machine makes that take);
#: with NAME=long it then waits a minute.
SCRIPT = """\
python3 -c '
import time
memory = bytearray(50 * 2**20)
for i in range(0, len(memory), 4096):
    memory[i] = 1
while time.process_time() < 5:
    pass
'
if [ "$NAME" = "long" ]; then sleep 60; fi
"""


@pytest.fixture(autouse=True)
def cancel_jobs_at_end(db):
    with slurm_cleanup():
        yield


@pytest.fixture
def assignment(course) -> Assignment:
    return Assignment.objects.create(
        course=course, slug="spin", title="Spin", script_template=SCRIPT, parameters=PARAMETERS, gpus=0
    )


def submit_and_run(client, user, course_slug: str, **resources: str) -> Job:
    client.force_login(user)
    response = client.post(reverse("jobs:job-create", args=[course_slug, "spin"]), submit_form(**resources))
    assert response.status_code == 302, response.content.decode()[:2000]
    job = Job.objects.filter(user=user).latest("pk")
    job_dispatch(job.pk)
    return job


def test_a_job_that_kept_one_of_four_cpus_busy_gets_its_figures_and_a_smaller_request_prefilled(
    client, student, assignment
):
    job = submit_and_run(client, student, "cs101", gpus="0", cpus="4", mem_mb="2000", minutes="10")

    job = wait_for_status(job, Status.COMPLETED, Status.FAILED)

    assert job.status == Status.COMPLETED
    assert job.usage_collected_at is not None  # in the same sync cycle that saw it end
    print(f"elapsed {job.elapsed_seconds} s, TotalCPU {job.cpu_seconds_used} s, MaxRSS {job.max_rss_mb} MB")
    assert 5 <= job.cpu_seconds_used <= job.elapsed_seconds + 1
    assert 50 <= job.max_rss_mb <= 200
    assert job.gpu_util_percent is None  # not measured on the lab cluster
    use = job_use(job)
    assert use.cpu_percent <= 35
    assert use.suggestion.resources == {"gpus": 0, "cpus": 1, "mem_mb": 256, "minutes": 5}

    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "You asked for 4 CPUs and the job kept about 1 busy" in page
    assert "You asked for 2000 MB of memory" not in page and "You asked for 2 GB of memory" in page
    link = re.search(r'href="([^"]+)" id="resubmit-suggested"', page).group(1).replace("&amp;", "&")
    resubmit = client.get(link).content.decode()
    for name, value in {"gpus": 0, "cpus": 1, "mem_mb": 256, "minutes": 5}.items():
        assert re.search(rf'name="{name}" value="{value}"', resubmit), name


def test_a_job_that_used_what_it_asked_for_gets_no_suggestion(client, student, assignment):
    job = submit_and_run(client, student, "cs101", gpus="0", cpus="1", mem_mb="100", minutes="1")

    job = wait_for_status(job, Status.COMPLETED, Status.FAILED)

    assert job.status == Status.COMPLETED
    print(f"elapsed {job.elapsed_seconds} s, TotalCPU {job.cpu_seconds_used} s, MaxRSS {job.max_rss_mb} MB")
    use = job_use(job)
    assert use.mem_percent >= 40
    assert use.suggestion is None
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "What your job used" in page and 'id="use-suggestion"' not in page


@pytest.fixture
def full_course(db):
    """lab102 on account cs102, whose jobs may hold one GPU at once (GrpTRES gres/gpu=1, reconciled into Slurm)."""
    course = Course.objects.create(
        slug="lab102",
        code="CS102",
        title="Lab course",
        term="Fall",
        slurm_account="cs102",
        partition="gpu",
        max_gpus_course=1,
    )
    Assignment.objects.create(
        course=course, slug="spin", title="Spin", script_template=SCRIPT, parameters=PARAMETERS, gpus=1
    )
    student = make_user("student4", "student4")
    Enrollment.objects.create(user=student, course=course, role=Role.STUDENT)
    try:
        associations_reconcile(course_slugs=["lab102"], trigger="command")
        yield student
    finally:
        restore_cs102()


def test_a_job_behind_a_course_whose_gpus_are_all_in_use_says_why_it_waits(client, full_course):
    student = full_course
    first = wait_for_status(submit_and_run(client, student, "lab102", param_NAME="long"), Status.RUNNING)
    page = client.get(reverse("jobs:assignment-detail", args=["lab102", "spin"])).content.decode()
    assert 'id="course-gpus-full"' in page

    second = submit_and_run(client, student, "lab102", param_NAME="long")
    deadline = time.monotonic() + 60
    while (second := wait_for_status(second, Status.PENDING)).reason != "AssocGrpGRES":
        assert time.monotonic() < deadline, f"waits for {second.reason!r}"
        time.sleep(0.5)

    detail = client.get(reverse("jobs:job-detail", args=[second.uuid])).content.decode()
    my_jobs = client.get(reverse("jobs:job-list")).content.decode()
    print(f"{first.slurm_job_id} running; {second.slurm_job_id} waits, expected start {second.expected_start_at}")
    assert "All the GPUs your course may use at once are in use" in detail
    assert "Waiting: all the course&#x27;s GPUs are in use" in my_jobs
    assert ("Expected to start by" in detail) == (second.expected_start_at is not None)
