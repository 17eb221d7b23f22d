"""The worker's `associations_reconcile` task writes course policies into Slurm, and refuses a Slurm
account two courses share.

Everything here uses account cs102 and its student4 association, and puts cs102 back to no limits afterwards.
The dry runs name accounts Slurm does not have; should a broken dry run write them, they are removed after.
"""

from collections.abc import Iterator

import pytest
from django.urls import reverse

from clusterpolicy import associations
from clusterpolicy.models import AssociationRun
from clusterpolicy.tasks import associations_reconcile
from courses.models import Course, Enrollment, Role
from tests.behaviour_helpers import assoc_fields, restore_cs102, slurm
from tests.conftest import make_user

pytestmark = pytest.mark.slurm

LIMITS = "MaxJobs,MaxSubmit,MaxTRES,MaxWall,GrpTRESMins"
UNLIMITED = "||||"


def cs102_course(slug: str, **limits) -> Course:
    fields = {
        "max_gpus_per_job": 1,
        "max_cpus_per_job": 2,
        "max_mem_mb_per_job": 2000,
        "max_minutes_per_job": 20,
        "max_running_jobs_per_student": 1,
        "max_queued_jobs_per_student": 2,
        "gpu_hours_per_student": 50,
        "max_gpus_course": 8,
    }
    fields.update(limits)
    return Course.objects.create(
        slug=slug, code=slug.upper(), title=slug, term="Fall", slurm_account="cs102", partition="gpu", **fields
    )


@pytest.fixture
def cs102_restored(db):
    restore_cs102()
    assert assoc_fields("cs102", "student4", LIMITS) == UNLIMITED
    try:
        yield
    finally:
        restore_cs102()


@pytest.fixture
def student4(db):
    return make_user("student4", "student4")


def test_the_reconcile_task_writes_one_courses_policy_into_slurm_and_records_the_run(cs102_restored, student4):
    course = cs102_course("lab102")
    Enrollment.objects.create(user=student4, course=course, role=Role.STUDENT)

    associations_reconcile(course_id=course.pk, trigger="policy")

    assert assoc_fields("cs102", "student4", LIMITS) == "1|2|cpu=2,gres/gpu=1,mem=2000M|00:20:00|gres/gpu=3000"
    assert assoc_fields("cs102", "", "GrpTRES") == "gres/gpu=8"
    run = AssociationRun.objects.get()
    assert (run.trigger, run.dry_run, run.courses, run.errors) == ("policy", False, ["cs102"], [])
    assert run.finished_at is not None
    assert any("student4" in change["user"].split(",") and change["action"] == "modify" for change in run.changes)


SHARED = "Slurm account cs102 is used by several courses (shared-a, shared-b): left unchanged."


@pytest.fixture
def two_courses_one_account(cs102_restored, student4) -> tuple[Course, Course]:
    first = cs102_course("shared-a", max_running_jobs_per_student=1, max_minutes_per_job=20)
    second = cs102_course("shared-b", max_running_jobs_per_student=3, max_minutes_per_job=60)
    Enrollment.objects.create(user=student4, course=first, role=Role.STUDENT)
    Enrollment.objects.create(user=student4, course=second, role=Role.STUDENT)
    return first, second


def test_the_periodic_reconciliation_reports_an_account_two_courses_share_and_writes_neither_policy(
    client, two_courses_one_account
):
    associations_reconcile()

    assert assoc_fields("cs102", "student4", LIMITS) == UNLIMITED
    assert assoc_fields("cs102", "", "GrpTRES") == ""
    run = AssociationRun.objects.get()
    assert run.errors == [SHARED] and run.changes == [] and "cs102" not in run.courses
    client.force_login(make_user("ops", "ops1", is_staff=True))
    assert SHARED in client.get(reverse("clusterpolicy:associations")).content.decode()


@pytest.mark.parametrize("which", [0, 1])
def test_a_one_course_reconciliation_of_a_shared_account_reports_it_and_writes_nothing(two_courses_one_account, which):
    course = two_courses_one_account[which]

    associations_reconcile(course_id=course.pk, trigger="policy")

    assert assoc_fields("cs102", "student4", LIMITS) == UNLIMITED, "neither course's limits win"
    run = AssociationRun.objects.get()
    assert run.errors == [SHARED] and run.changes == []


@pytest.fixture
def dry_run_accounts() -> Iterator[None]:
    """The accounts the dry runs below would add, absent before and after (even when a test fails)."""

    def remove() -> None:
        slurm("sacctmgr", "-i", "delete", "account", "name=zz-later,zz-long", check=False)

    remove()
    try:
        yield
    finally:
        remove()


@pytest.mark.usefixtures("dry_run_accounts")
def test_a_shared_account_keeps_its_error_and_the_courses_after_it_are_still_reconciled(
    settings, two_courses_one_account, student4
):
    settings.LABQUEUE_COURSE_QOS = "normal"  # the site's default QOS: no course asked for one of its own
    later = cs102_course("later")
    Course.objects.filter(pk=later.pk).update(slurm_account="zz-later")  # sorts after cs102
    Enrollment.objects.create(user=student4, course=later, role=Role.STUDENT)
    Enrollment.objects.create(user=make_user("no-netid", None), course=later, role=Role.STUDENT)

    run = associations.associations_reconcile(dry_run=True, trigger="command")

    assert run.errors == [SHARED]
    assert run.courses == ["zz-later"]
    users = {user for change in run.changes if change["account"] == "zz-later" for user in change["user"].split(",")}
    assert users == {"", "student4"}, run.changes  # the account's own association, and student4's


@pytest.mark.usefixtures("dry_run_accounts")
def test_a_new_accounts_description_is_the_course_code_and_term_cut_at_60_characters(db):
    code, term = "C" * 32, "T" * 32  # the longest each may be
    Course.objects.create(slug="long-names", code=code, title="x", term=term, slurm_account="zz-long")

    run = associations.associations_reconcile(dry_run=True, trigger="command")  # reads Slurm, changes nothing

    [add] = [change for change in run.changes if change["action"] == "add-account"]
    assert f"description={code} {term}"[: len("description=") + 60] in add["argv"]
