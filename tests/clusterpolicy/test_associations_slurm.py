"""The course policy written into Slurm with `reconcile_associations`, and held by Slurm itself.

Everything here uses account cs102 and its student4 association (the other tests use cs101, and
the usage tests use cs102 with student1-3); every test puts cs102 back to no limits afterwards.
"""

import io
import subprocess
import time
import uuid

import pytest
from django.core.management import call_command
from django.urls import reverse

from clusterpolicy.associations import associations_reconcile
from clusterpolicy.models import AssociationRun
from courses.models import Assignment, Course, Enrollment, Role
from jobs.explanations import explain
from jobs.models import Job, Status
from slurm import accounts, runner
from tests.conftest import ECHO_SCRIPT, PARAMETERS, make_user, submit_form
from tests.lab import slurm_tool

pytestmark = pytest.mark.slurm

CS102_USERS = ["student1", "student2", "student3", "student4"]
UNLIMITED = {
    "MaxJobs": "-1",
    "MaxSubmitJobs": "-1",
    "MaxTRES": "cpu=-1,mem=-1,gres/gpu=-1",
    "MaxWall": "-1",
    "GrpTRESMins": "gres/gpu=-1",
}


def restore_cs102() -> None:
    """cs102 as scripts/labcluster makes it: student1-4 associated, no limits anywhere."""
    accounts.sacctmgr_apply(accounts.user_add_argv(cluster="lab", account="cs102", users=CS102_USERS))
    argv = accounts.user_modify_argv(cluster="lab", account="cs102", users=["student1"], values=UNLIMITED)
    argv[argv.index("name=student1")] = "name=" + ",".join(CS102_USERS)
    accounts.sacctmgr_apply(argv)
    accounts.sacctmgr_apply(
        accounts.account_modify_argv(cluster="lab", account="cs102", values={"GrpTRES": "gres/gpu=-1"})
    )


def cs102_assocs() -> dict[str, accounts.Assoc]:
    return {assoc.user: assoc for assoc in accounts.assoc_list(cluster="lab", accounts=["cs102"])}


@pytest.fixture
def lab_course(db):
    course = Course.objects.create(
        slug="lab102",
        code="CS102",
        title="Lab course",
        term="Fall",
        slurm_account="cs102",
        partition="gpu",
        max_gpus_per_job=1,
        max_cpus_per_job=2,
        max_mem_mb_per_job=2000,
        max_minutes_per_job=20,
        max_running_jobs_per_student=1,
        max_queued_jobs_per_student=2,
        gpu_hours_per_student=50,
        max_gpus_course=8,
    )
    Assignment.objects.create(
        course=course,
        slug="hello",
        title="Hello",
        script_template=ECHO_SCRIPT,
        parameters=PARAMETERS,
        gpus=1,
        cpus=1,
        mem_mb=500,
        minutes=5,
    )
    try:
        yield course
    finally:
        restore_cs102()


@pytest.fixture
def student4(lab_course):
    user = make_user("student4", "student4")
    Enrollment.objects.create(user=user, course=lab_course, role=Role.STUDENT)
    return user


def reconcile_output(*args: str) -> str:
    out = io.StringIO()
    call_command("reconcile_associations", "--course", "lab102", *args, stdout=out)
    return out.getvalue()


def test_a_dry_run_prints_the_sacctmgr_changes_and_changes_nothing(lab_course, student4):
    before = cs102_assocs()
    output = reconcile_output("--dry-run")
    print(output)
    assert "would run: sacctmgr -i modify account where name=cs102 cluster=lab set GrpTRES=gres/gpu=8" in output
    assert (
        "would run: sacctmgr -i modify user where name=student4 account=cs102 cluster=lab set MaxJobs=1 "
        "MaxSubmitJobs=2 MaxTRES=cpu=2,gres/gpu=1,mem=2000M MaxWall=20 GrpTRESMins=gres/gpu=3000"
    ) in output
    assert "MaxJobs: none -> 1" in output
    assert cs102_assocs() == before
    assert AssociationRun.objects.get().dry_run


def test_a_member_whose_cluster_username_is_empty_text_gets_no_association(lab_course, student4):
    blank = make_user("blank-netid", None)
    type(blank).objects.filter(pk=blank.pk).update(netid="")  # written around the forms, which store None
    Enrollment.objects.create(user=blank, course=lab_course, role=Role.STUDENT)

    output = reconcile_output("--dry-run")

    assert "name=student4 " in output and "name= " not in output and "name=student4, " not in output


def test_reconcile_twice_in_a_row_changes_nothing_the_second_time(lab_course, student4):
    first = reconcile_output()
    second = reconcile_output()
    print(first, second, sep="\n")
    assert "ran: sacctmgr -i modify user where name=student4" in first
    assert "Slurm matches the portal: nothing to change." in second
    assert AssociationRun.objects.order_by("pk").last().changes == []
    mine = cs102_assocs()["student4"]
    assert (mine.max_jobs, mine.max_submit, mine.max_wall_minutes) == (1, 2, 20)
    assert mine.max_tres == {"cpu": 2, "mem": 2000, "gres/gpu": 1}
    assert mine.grp_tres_mins == {"gres/gpu": 3000}
    assert cs102_assocs()[""].grp_tres == {"gres/gpu": 8}
    assert cs102_assocs()["student1"].max_jobs is None, "people the portal does not know are left alone"


def sbatch_as_student4(*options: str) -> subprocess.CompletedProcess:
    argv = [
        "runuser",
        "-u",
        "student4",
        "--",
        slurm_tool("sbatch"),
        "--parsable",
        "--export=NONE",
        "--account=cs102",
        "--partition=gpu",
        f"--job-name=lq-policy-{uuid.uuid4().hex[:8]}",
        "--output=/dev/null",
        "-t",
        "2",
        *options,
        "--wrap=sleep 1",
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd="/tmp")


def squeue_state(job_id: str) -> tuple[str, str]:
    for _ in range(20):
        out = runner.run(["squeue", "-h", "-j", job_id, "-o", "%T|%r"]).strip()
        state, _, reason = out.partition("|")
        if state == "PENDING" and reason not in ("None", "Priority", "Resources"):
            return state, reason
        time.sleep(0.5)
    return state, reason


def test_an_over_cap_job_is_refused_by_the_portal_and_held_by_slurm_when_sent_around_it(client, lab_course, student4):
    client.force_login(student4)
    response = client.post(reverse("jobs:job-create", args=["lab102", "hello"]), submit_form(gpus="2"))
    assert response.status_code == 400
    assert "This course allows at most 1 GPU per job; you asked for 2." in response.content.decode()

    reconcile_output()
    made = []
    try:
        over = sbatch_as_student4("--gres=gpu:2")
        assert over.returncode == 0, over.stderr
        made.append(over.stdout.strip())
        state, reason = squeue_state(made[0])
        print(f"sbatch --gres=gpu:2 as student4 around the portal: job {made[0]} {state} ({reason})")
        assert (state, reason) == ("PENDING", "AssocMaxGRESPerJob")
        held = Job(status=Status.PENDING, slurm_state=state, reason=reason)
        assert explain(held).key == "waiting-own-limit"

        second = sbatch_as_student4("--hold")
        made.append(second.stdout.strip())
        third = sbatch_as_student4("--hold")
        print(f"third job over MaxSubmitJobs=2: exit {third.returncode}: {third.stderr.strip()}")
        assert third.returncode != 0
        assert "AssocMaxSubmitJobLimit" in third.stderr
        message = "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
        assert message in third.stderr
        refused = Job(status=Status.REJECTED, message=f"Batch job submission failed: {message}")
        assert explain(refused).key == "over-policy"
    finally:
        if made:
            runner.run(["scancel", *filter(None, made)])


def test_a_limit_changed_by_hand_is_reported_as_drift_on_the_staff_page(client, lab_course, student4):
    associations_reconcile(course_slugs=["lab102"], trigger="command")
    accounts.sacctmgr_apply(
        accounts.user_modify_argv(
            cluster="lab", account="cs102", users=["student4"], values={"MaxJobs": "9", "MaxWall": "600"}
        )
    )
    run = associations_reconcile(course_slugs=["lab102"], trigger="periodic")
    assert [change["differences"] for change in run.changes] == [["MaxJobs: 9 -> 1", "MaxWall: 600 -> 20"]]
    assert cs102_assocs()["student4"].max_jobs == 1, "the periodic run puts the policy back"

    client.force_login(make_user("ops", "ops1", is_staff=True))
    page = client.get(reverse("clusterpolicy:associations")).content.decode()
    assert "MaxJobs: 9 -&gt; 1" in page and "MaxWall: 600 -&gt; 20" in page
    assert "sacctmgr -i modify user where name=student4 account=cs102 cluster=lab set MaxJobs=1 MaxWall=20" in page


def test_the_drift_page_is_for_operations_staff_only(client, student4):
    url = reverse("clusterpolicy:associations")
    assert client.get(url).status_code == 302
    client.force_login(student4)
    assert client.get(url).status_code == 403
    client.force_login(make_user("ops", "ops1", is_staff=True))
    assert client.get(url).status_code == 200
    assert client.post(url).status_code == 405
    old = client.get("/jobs/slurm-sync/")  # the page's address before it moved to clusterpolicy
    assert (old.status_code, old.headers["Location"]) == (301, url)


def test_dropping_a_student_removes_their_association(lab_course, student4):
    reconcile_output()
    assert "student4" in cs102_assocs()
    Enrollment.objects.filter(user=student4, course=lab_course).delete()
    output = reconcile_output()
    print(output)
    assert "ran: sacctmgr -i delete user where name=student4 account=cs102 cluster=lab" in output
    assert "student4" not in cs102_assocs()
    assert {"student1", "student2", "student3"} <= set(cs102_assocs()), "only the dropped student goes"


def test_a_policy_change_and_an_enrollment_ask_the_worker_to_reconcile_after_commit(
    client, lab_course, student4, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    from portal.celery import app

    monkeypatch.setattr(app, "send_task", lambda name, **kwargs: sent.append((name, kwargs["kwargs"])))
    client.force_login(make_user("ops", "ops1", is_staff=True))
    data = {
        "max_gpus_per_job": "1",
        "max_cpus_per_job": "2",
        "max_mem_mb_per_job": "2000",
        "max_minutes_per_job": "20",
        "partition": "gpu",
        "qos": "",
    }
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("courses:course-policy", args=["lab102"]), data)
    assert sent == [("clusterpolicy.tasks.associations_reconcile", {"course_id": lab_course.pk, "trigger": "policy"})]
