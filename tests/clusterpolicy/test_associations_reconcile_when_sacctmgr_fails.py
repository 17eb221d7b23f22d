"""Reconciling associations when sacctmgr does not answer, or refuses one change: the run records the
error, the staff page shows it, and the rest of the plan still runs.

No association of the lab cluster changes here. "Does not answer" is a worker without Slurm tools
(SLURM_BIN_DIR is an empty folder, as in tests/slurm/test_slurm_worker_without_slurm_tools.py). "One
change refused" is the real sacctmgr asked about a cluster accounting does not know (`lqnocluster`) and an
account nobody has (`lqghost`): it refuses to add the account and the user (Slurm 22.05: "This cluster ...
doesn't exist"; 24.11: "Cluster ... has not been added yet", "No account lqghost on cluster lqnocluster") and
answers "Nothing modified" (24.11: "Request didn't affect anything") to the modifications, which the adapter
counts as done.
"""

import logging
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils.html import escape

from clusterpolicy.models import AssociationRun
from clusterpolicy.tasks import associations_reconcile
from courses.models import Course, Enrollment, Role
from slurm import runner
from tests.conftest import make_user

pytestmark = pytest.mark.slurm  # the real sacctmgr, asked about a cluster it does not know

GHOST = "lqghost"


@pytest.fixture
def ghost_course(db) -> Course:
    course = Course.objects.create(
        slug="ghost101",
        code="GH101",
        title="Ghost",
        term="Fall",
        slurm_account=GHOST,
        max_running_jobs_per_student=2,
        max_gpus_course=4,
    )
    Enrollment.objects.create(user=make_user("student4", "student4"), course=course, role=Role.STUDENT)
    return course


@pytest.fixture
def no_slurm_tools(settings, tmp_path: Path) -> Path:
    settings.SLURM_BIN_DIR = str(tmp_path)
    return tmp_path


@pytest.fixture
def unknown_cluster(settings) -> str:
    settings.LABQUEUE_SLURM_CLUSTER = "lqnocluster"
    return "lqnocluster"


def staff_page(client) -> str:
    client.force_login(make_user("ops", "ops1", is_staff=True))
    response = client.get(reverse("clusterpolicy:associations"))
    assert response.status_code == 200
    return response.content.decode()


def test_the_reconcile_task_records_that_sacctmgr_did_not_answer_and_the_worker_carries_on(
    client, ghost_course, no_slurm_tools
):
    with runner.command_log() as commands:
        associations_reconcile(course_id=ghost_course.pk, trigger="policy")  # logs, does not raise

    assert [command.tool for command in commands] == ["sacctmgr"], "nothing is changed after a failed read"
    run = AssociationRun.objects.get()
    assert run.trigger == "policy" and run.finished_at is not None and run.changes == []
    assert len(run.errors) == 1
    assert run.errors[0].startswith("Could not read Slurm's associations: sacctmgr could not be run on the worker")
    assert escape(run.errors[0]) in staff_page(client)


def test_the_reconcile_command_fails_saying_slurm_did_not_answer_and_records_the_run(ghost_course, no_slurm_tools):
    with pytest.raises(CommandError) as caught:
        call_command("reconcile_associations", "--course", "ghost101")

    assert str(caught.value).startswith("Slurm did not answer: sacctmgr could not be run on the worker")
    run = AssociationRun.objects.get()
    assert run.trigger == "command" and run.courses == [GHOST] and run.finished_at is not None
    assert run.errors[0].startswith("Could not read Slurm's associations:")


def refused_for_the_unknown_cluster(text: str) -> bool:
    """Slurm's own words for an account or user added to a cluster accounting does not know."""
    return any(
        words in text
        for words in (
            "This cluster 'lqnocluster' doesn't exist",  # 22.05
            "Cluster 'lqnocluster' has not been added yet",  # 24.11, the account
            "No account lqghost on cluster lqnocluster",  # 24.11, the user
        )
    )


def test_a_change_sacctmgr_refuses_is_recorded_and_the_other_changes_still_run(
    client, ghost_course, unknown_cluster, caplog
):
    with runner.command_log() as commands, caplog.at_level(logging.WARNING, logger="clusterpolicy.associations"):
        associations_reconcile(trigger="periodic")

    run = AssociationRun.objects.get()
    actions = [change["action"] for change in run.changes]
    assert actions == ["add-account", "modify", "add-user", "modify"]
    reads = [command for command in commands if command.tool == "sacctmgr" and "show" in command.argv]
    ran = [command.argv[1:] for command in commands if command.tool == "sacctmgr" and command not in reads]
    assert len(reads) == 2  # which accounts LabQueue did not make, then the associations
    assert ran == [change["argv"][1:] for change in run.changes], "every change is tried, in order, after a refusal"
    refused = [change["command"] for change in run.changes if change["action"].startswith("add-")]
    assert [error.partition(": ")[0] for error in run.errors] == refused
    assert all(refused_for_the_unknown_cluster(error.partition(": ")[2]) for error in run.errors)
    page = staff_page(client)
    assert "Errors" in page and all(escape(error) in page for error in run.errors)
    logged = [record.getMessage() for record in caplog.records if record.name == "clusterpolicy.associations"]
    assert logged == ["reconcile_associations: {} failed: {}".format(*error.split(": ", 1)) for error in run.errors], (
        "the operators' log names each refused command and Slurm's reason"
    )


def test_the_reconcile_command_prints_each_refused_change_and_fails_naming_how_many(
    capsys, ghost_course, unknown_cluster
):
    with pytest.raises(CommandError) as caught:
        call_command("reconcile_associations")

    assert str(caught.value) == "2 change(s) failed."
    out, err = capsys.readouterr()
    assert out.count("ran: sacctmgr") == 4
    assert err.count("error: sacctmgr -i add ") == 2 and refused_for_the_unknown_cluster(err)
    assert len(AssociationRun.objects.get().errors) == 2
