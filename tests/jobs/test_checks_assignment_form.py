"""The check script in the instructor's assignment form: kept per version, same rules as the script template;
and what the check's sbatch is asked for (no cluster: the worker's JobSpec, not a submission)."""

import html

from django.urls import reverse

from courses.models import Assignment, AssignmentVersion
from jobs.checks import CHECK_RESOURCES, check_spec, check_start
from jobs.models import CheckRun, Status
from tests.conftest import job_row
from tests.courses.test_assignment_edit import SBATCH_REFUSED, edit_url, form_data

CHECK = 'test -s results/out.txt && echo "CHECK pass output: written" || echo "CHECK fail output: missing"\n'


def test_an_instructor_saves_a_check_and_it_is_kept_in_a_new_version(client, instructor, assignment):
    client.force_login(instructor)
    page = client.get(edit_url()).content.decode()
    assert 'name="check_script"' in page and "Check (automatic feedback)" in page

    response = client.post(edit_url(), form_data(slug="hello", check_script=CHECK))
    assert response.status_code == 302
    assignment.refresh_from_db()
    assert assignment.check_script == CHECK.rstrip("\n")
    assert (
        AssignmentVersion.objects.filter(assignment=assignment).latest("number").check_script == assignment.check_script
    )


def test_changing_only_the_check_makes_a_new_version_and_the_old_one_keeps_its_check(client, instructor, assignment):
    client.force_login(instructor)
    client.post(edit_url(), form_data(slug="hello", check_script=CHECK))
    client.post(edit_url(), form_data(slug="hello", check_script='echo "SCORE 1/1"'))
    versions = list(AssignmentVersion.objects.filter(assignment=assignment).order_by("number"))
    assert [version.check_script for version in versions[-2:]] == [CHECK.rstrip("\n"), 'echo "SCORE 1/1"']


def test_a_check_with_an_sbatch_line_is_refused_and_nothing_is_saved(client, instructor, assignment):
    client.force_login(instructor)
    response = client.post(edit_url(), form_data(slug="hello", check_script="#SBATCH --gres=gpu:4\n" + CHECK))
    assert response.status_code == 200
    assert SBATCH_REFUSED in html.unescape(response.content.decode())
    assert Assignment.objects.get().check_script == ""


def test_a_check_with_its_own_interpreter_line_is_refused(client, instructor, assignment):
    client.force_login(instructor)
    response = client.post(edit_url(), form_data(slug="hello", check_script="#!/usr/bin/python3\nprint(1)\n"))
    assert "Leave out the #! line" in html.unescape(response.content.decode())


def test_the_checks_sbatch_waits_for_the_job_on_its_account_and_partition_as_the_student(student, assignment):
    job = job_row(student, assignment, status=Status.COMPLETED, slurm_job_id="4242", partition="gpu", qos="q1")
    run = CheckRun.objects.create(job=job, token="ab" * 16)
    spec = check_spec(run)
    assert spec.dependency == "afterok:4242"
    assert (spec.run_as, spec.account, spec.partition, spec.qos) == ("student1", "cs101", "gpu", "q1")
    assert spec.script_path == f"{job.workdir}/check-{'ab' * 16}.sh"
    assert spec.stdout == spec.stderr == f"{job.workdir}/check-{'ab' * 16}.out"
    assert spec.workdir == job.workdir and not spec.reservation
    assert (CHECK_RESOURCES.gpus, CHECK_RESOURCES.cpus) == (0, 1)


def test_a_completed_job_of_a_version_without_a_check_gets_no_check_run(student, assignment):
    version = AssignmentVersion.objects.create(assignment=assignment, number=1, script_template="true")
    job = job_row(student, assignment, status=Status.COMPLETED, assignment_version=version)
    assert check_start(job_id=job.pk) is None
    assert not CheckRun.objects.exists()


def test_a_job_page_without_a_check_shows_no_checks_block(client, student, assignment):
    job = job_row(student, assignment, status=Status.COMPLETED)
    client.force_login(student)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert 'id="checks"' not in page
