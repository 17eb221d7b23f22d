"""Every catalogue entry is produced for real on the lab cluster and explained on the job page."""

import re

import pytest
from django.urls import reverse

from courses.models import Assignment
from jobs.models import Job, Status
from tests.conftest import dispatch, submit_form, wait_for_status

pytestmark = pytest.mark.slurm

# (script, expected explanation key, words from its title, words from its next step)
FAILURES = [
    ("echo starting\nexit 1\n", "nonzero-exit", "ended with an error", "fix it, then retry"),
    ("python3 -c 'import nosuchmodule_lq'\n", "module-not-found", "Python module is missing", "module name"),
    ("python3 -c 'open(\"missing.csv\")'\n", "file-not-found", "was not found", "Check the file name"),
    ("python3 -c 'def f(:'\n", "syntax-error", "syntax error", "Fix the line"),
    ("python3 -c 'raise ValueError(\"bad value\")'\n", "python-exception", "raised an error", "fix the code"),
    ("python3 -c 'raise KeyboardInterrupt'\n", "keyboard-interrupt", "was interrupted", "retry"),
    (
        "echo 'RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2\nexit 1\n",
        "cuda-out-of-memory",
        "GPU ran out of memory",
        "smaller batch size",
    ),
    (
        "echo 'RuntimeError: CUDA error: device-side assert triggered' >&2\nexit 1\n",
        "cuda-error",
        "GPU (CUDA) error",
        "asks for at least one GPU",
    ),
    ("nosuchcommand_lq --train\n", "command-not-found", "does not exist", "spelling"),
    ("touch /etc/labqueue-not-allowed\n", "permission-denied", "Permission denied", "own directory"),
    ("echo 'write error: Disk quota exceeded' >&2\nexit 1\n", "disk-quota", "quota is full", "Delete old outputs"),
    ("echo 'epoch 3 loss nan'\nexit 1\n", "nan-loss", "loss became NaN", "Lower the learning rate"),
    ("sleep 60 &\nkill -9 $!\nwait $!\n", "killed", "was killed", "more memory"),
    ("kill -9 $$\n", "killed", "was killed", "more memory"),
]


def run_script(client, student, course, script: str, **form) -> Job:
    slug = f"a{Assignment.objects.count()}"
    Assignment.objects.create(course=course, slug=slug, title="Failing", script_template=script, gpus=0)
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", slug]), submit_form(gpus="0", **form))
    job = dispatch(Job.objects.latest("created_at"))
    if job.status == Status.REJECTED:
        return job
    return wait_for_status(job, Status.COMPLETED, Status.FAILED, Status.CANCELLED, timeout=180)


def explanation_on_page(client, job) -> str:
    response = client.get(reverse("jobs:job-detail", args=[job.uuid]))
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize(("script", "key", "title", "next_step"), FAILURES, ids=[f[1] for f in FAILURES])
def test_a_failed_job_is_explained_in_plain_words(client, student, course, script, key, title, next_step):
    job = run_script(client, student, course, script)
    assert job.status == Status.FAILED
    assert job.explanation_key == key
    page = explanation_on_page(client, job)
    assert f'data-key="{key}"' in page
    assert title in page
    assert next_step in page
    assert "How retries work" in page
    assert "Retry" in page


def test_a_job_over_its_time_limit_is_explained_with_a_suggestion_of_more_time(client, student, course):
    job = run_script(client, student, course, "sleep 300\n", minutes="1")  # Slurm checks limits every ~30 s
    assert job.slurm_state == "TIMEOUT"
    page = explanation_on_page(client, job)
    assert "ran out of time" in page and "Retry with more time" in page
    form = client.get(reverse("jobs:job-retry", args=[job.uuid])).content.decode()
    assert 'name="minutes" value="2"' in form


def test_a_job_over_its_memory_is_explained_with_a_suggestion_of_more_memory(client, student, course):
    script = "python3 -c 'import time; x = bytearray(600 * 1024 * 1024); time.sleep(30)'\n"
    job = run_script(client, student, course, script, mem_mb="200")
    assert job.status == Status.FAILED
    assert job.explanation_key == "oom-killed"
    page = explanation_on_page(client, job)
    assert "The job ran out of memory" in page and "Retry with more memory" in page
    form = client.get(reverse("jobs:job-retry", args=[job.uuid])).content.decode()
    assert 'name="mem_mb" value="400"' in form


def test_a_job_the_student_cancelled_is_explained(client, student, course):
    Assignment.objects.create(course=course, slug="long", title="Long", script_template="sleep 300\n", gpus=0)
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "long"]), submit_form(gpus="0"))
    job = wait_for_status(dispatch(Job.objects.get()), Status.RUNNING)
    from jobs.dispatch import job_scancel

    job_scancel(job_id=job.pk)
    job = wait_for_status(job, Status.CANCELLED)
    assert job.cancelled_by
    page = explanation_on_page(client, job)
    assert "The job was cancelled" in page and f"by {job.cancelled_by}" in page


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"slurm_account": "nosuchacct"}, "invalid-account", "not set up for you"),
        ({"partition": "nosuchpart"}, "invalid-partition", "partition does not exist"),
        ({"max_minutes_per_job": 100000}, "time-limit-invalid", "more time than the cluster allows"),
    ],
)
def test_a_job_slurm_refuses_is_explained(client, student, course, change, key, words):
    for name, value in change.items():
        setattr(course, name, value)
    course.save()
    form = {"minutes": "600"} if key == "time-limit-invalid" else {}
    job = run_script(client, student, course, "true\n", **form)
    assert job.status == Status.REJECTED
    assert job.explanation_key == key
    page = explanation_on_page(client, job)
    assert words in page and "Slurm said:" in page
    if key == "time-limit-invalid":  # the retry form starts from the job's own minutes, for the student to lower
        retry = client.get(reverse("jobs:job-retry", args=[job.uuid]))
        assert retry.status_code == 200
        assert re.search(r'<input[^>]*name="minutes"[^>]*value="600"', retry.content.decode())


def held_job(client, student) -> Job:
    """A job of the student's held in the queue by `scontrol hold`. On an idle cluster Slurm may start a job
    before the hold reaches it (the hold is then refused, or the job runs anyway); then it is sent again."""
    from slurm import SlurmError, runner

    for _ in range(3):
        client.post(reverse("jobs:job-create", args=["cs101", "held"]), submit_form(gpus="0"))
        job = dispatch(Job.objects.latest("created_at"))
        try:
            runner.run(["scontrol", "hold", job.slurm_job_id])
        except SlurmError:
            continue  # already started
        for _ in range(20):
            job = wait_for_status(job, Status.PENDING, Status.COMPLETED, Status.FAILED)
            if job.status != Status.PENDING or "Held" in job.reason:
                break
        if job.status == Status.PENDING:
            return job
    raise AssertionError("Slurm started each of three jobs before its hold")


def test_a_held_job_explains_why_it_waits(client, student, course):
    Assignment.objects.create(course=course, slug="held", title="Held", script_template="true\n", gpus=0)
    client.force_login(student)
    job = held_job(client, student)
    try:
        assert "Held" in job.reason
        page = explanation_on_page(client, job)
        assert "The job is on hold" in page
    finally:
        from slurm import runner

        runner.run(["scancel", job.slurm_job_id])


def test_a_job_on_a_node_that_fails_is_explained_as_not_the_students_fault(client, student, course):
    import slurm
    from tests.lab import labcluster

    Assignment.objects.create(course=course, slug="node", title="Node", script_template="sleep 300\n", gpus=0)
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "node"]), submit_form(gpus="0"))
    job = wait_for_status(dispatch(Job.objects.get()), Status.RUNNING)
    node = slurm.queue()[job.slurm_job_id].nodes
    labcluster("fail-node", node)
    try:
        job = wait_for_status(job, Status.FAILED, timeout=150)
    finally:
        labcluster("restore-node", node)
    assert job.slurm_state == "NODE_FAIL"
    page = explanation_on_page(client, job)
    assert "The computer running your job failed" in page
    assert "This was not caused by your job" in page and "Press Retry" in page
