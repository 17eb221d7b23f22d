"""The association reconciliation (which runs sacctmgr with Slurm admin rights) never writes more than
operations staff allow, whatever the course row says: a policy saved before the ceilings existed, or
written straight into the database. Run for real against the lab cluster.

Like tests/clusterpolicy/test_associations_slurm.py, this uses account cs102 and its student4
association, and puts cs102 back as scripts/labcluster makes it; the QOS it makes is removed again.
"""

import subprocess
import uuid

import pytest
from django.urls import reverse

from clusterpolicy.associations import associations_reconcile
from courses.models import Assignment, Course, Enrollment, Role
from jobs.models import Job
from tests.behaviour_helpers import assoc_fields, restore_cs102, slurm
from tests.conftest import ECHO_SCRIPT, PARAMETERS, make_user, submit_form
from tests.lab import slurm_tool
from tests.security.conftest import site_ceilings_set

pytestmark = pytest.mark.slurm

PRIVILEGED_QOS = "lqsecb"  # a real QOS the site never allowed courses to use
LIMITS = "MaxJobs,MaxSubmit,MaxTRES,MaxWall,GrpTRESMins,QOS"


@pytest.fixture
def privileged_qos():
    slurm("sacctmgr", "-i", "add", "qos", PRIVILEGED_QOS, "Priority=1000", check=False)
    try:
        yield PRIVILEGED_QOS
    finally:
        slurm(
            "sacctmgr",
            "-i",
            "modify",
            "user",
            "where",
            "account=cs102",
            "cluster=lab",
            "set",
            f"QOS-={PRIVILEGED_QOS}",
            check=False,
        )
        slurm("sacctmgr", "-i", "delete", "qos", PRIVILEGED_QOS, check=False)


@pytest.fixture
def ceilings(settings):
    site_ceilings_set(settings, allowed_qos=[])
    settings.LABQUEUE_COURSE_QOS = ""


@pytest.fixture
def greedy_course(db, ceilings, privileged_qos):
    """A course whose row asks for far more than operations staff allow, and a QOS they never allowed."""
    restore_cs102()
    course = Course.objects.create(
        slug="lab102",
        code="CS102",
        title="Greedy",
        term="Fall",
        slurm_account="cs102",
        partition="gpu",
        max_gpus_per_job=32000,
        max_cpus_per_job=32,  # exactly its ceiling: held to nothing, so no note
        max_mem_mb_per_job=1_000_000,
        max_minutes_per_job=1_000_000,
        max_running_jobs_per_student=500,
        max_queued_jobs_per_student=None,
        gpu_hours_per_student=None,
        max_gpus_course=32000,
        qos=privileged_qos,
    )
    Assignment.objects.create(
        course=course, slug="hello", title="Hello", script_template=ECHO_SCRIPT, parameters=PARAMETERS, gpus=0
    )
    try:
        yield course
    finally:
        restore_cs102()


@pytest.fixture
def student4(greedy_course):
    user = make_user("student4", "student4")
    Enrollment.objects.create(user=user, course=greedy_course, role=Role.STUDENT)
    return user


def sbatch_as_student4_with_qos(qos: str) -> subprocess.CompletedProcess:
    argv = [
        "runuser",
        "-u",
        "student4",
        "--",
        slurm_tool("sbatch"),
        "--parsable",
        "--export=NONE",
        "--account=cs102",
        f"--qos={qos}",
        "--hold",
        f"--job-name=lq-ceiling-{uuid.uuid4().hex[:8]}",
        "--output=/dev/null",
        "-t",
        "1",
        "--wrap=true",
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd="/tmp")


def test_the_reconciliation_never_writes_a_policy_above_the_ceilings_into_slurm(greedy_course, student4):
    run = associations_reconcile(course_slugs=["lab102"], trigger="command")

    limits = assoc_fields("cs102", "student4", LIMITS)
    print(f"student4 in cs102 after the reconciliation: {limits}")
    # MaxJobs, MaxSubmit (no limit in the row), cpu, gres/gpu, mem (128000M), MaxWall, GrpTRESMins, QOS.
    assert limits == "20|20|cpu=32,gres/gpu=4,mem=125G|1-00:00:00|gres/gpu=6000|normal"
    assert assoc_fields("cs102", "", "GrpTRES") == "gres/gpu=8"
    assert [error for error in run.errors if "above the ceiling" in error] == [
        "lab102: the policy's GPUs per job (32000) is above the ceiling; Slurm gets 4.",
        "lab102: the policy's MB of memory per job (1000000) is above the ceiling; Slurm gets 128000.",
        "lab102: the policy's minutes per job (1000000) is above the ceiling; Slurm gets 1440.",
        "lab102: the policy's running jobs per student (500) is above the ceiling; Slurm gets 20.",
        "lab102: the policy's waiting or running jobs per student (no limit) is above the ceiling; Slurm gets 20.",
        "lab102: the policy's GPU-hours per student (no limit) is above the ceiling; Slurm gets 100.",
        "lab102: the policy's GPUs for the whole course at once (32000) is above the ceiling; Slurm gets 8.",
    ]
    assert f"lab102: QOS {PRIVILEGED_QOS} is not allowed by operations staff; not given to anyone." in run.errors
    for change in run.changes:
        assert PRIVILEGED_QOS not in change["command"] and "32000" not in change["command"]


def test_a_qos_the_site_did_not_allow_stays_unusable_for_the_students(greedy_course, student4):
    associations_reconcile(course_slugs=["lab102"], trigger="command")

    refused = sbatch_as_student4_with_qos(PRIVILEGED_QOS)
    if refused.returncode == 0:
        slurm("scancel", refused.stdout.strip().split(";")[0], check=False)
    print(f"sbatch --qos={PRIVILEGED_QOS} as student4: exit {refused.returncode}: {refused.stderr.strip()}")
    assert refused.returncode != 0
    assert "Invalid qos specification" in refused.stderr


def test_portal_jobs_of_the_course_are_not_sent_with_the_disallowed_qos(client, greedy_course, student4):
    client.force_login(student4)
    response = client.post(reverse("jobs:job-create", args=["lab102", "hello"]), submit_form(gpus="0"))
    assert response.status_code == 302
    assert Job.objects.get().qos == "", "the site's default QOS (none here), not the course row's"


def test_a_qos_the_site_allows_is_added_to_each_students_qos_list_and_their_sbatch_may_use_it(
    settings, greedy_course, student4
):
    settings.LABQUEUE_ALLOWED_QOS = [PRIVILEGED_QOS]

    run = associations_reconcile(course_slugs=["lab102"], trigger="command")

    assert not [error for error in run.errors if "QOS" in error], run.errors
    assert set(assoc_fields("cs102", "student4", "QOS").split(",")) == {"normal", PRIVILEGED_QOS}
    accepted = sbatch_as_student4_with_qos(PRIVILEGED_QOS)
    try:
        assert accepted.returncode == 0, accepted.stderr
    finally:
        if accepted.stdout.strip():
            slurm("scancel", accepted.stdout.strip().split(";")[0], check=False)
