"""When the lab's nodes free up (a site without preemption), asked of a worker whose Slurm tools are missing:
the adapter says Slurm is unavailable, and the lab keeps its reservation with nothing said. No cluster needed:
SLURM_BIN_DIR points at an empty folder, so squeue really fails to start."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from clusterpolicy import labs
from courses.models import LabSession
from slurm import SlurmUnavailable, reservations


@pytest.fixture
def bin_dir(settings, tmp_path: Path) -> Path:
    settings.SLURM_BIN_DIR = str(tmp_path)
    return tmp_path


def test_the_adapter_asks_squeue_for_the_running_jobs_end_on_those_nodes(bin_dir):
    with pytest.raises(SlurmUnavailable) as caught:
        reservations.nodes_busy_until("gpu[1-2]")

    assert caught.value.argv[1:] == ["-h", "-a", "-t", "RUNNING,COMPLETING", "-w", "gpu[1-2]", "-o", "%e"]


def test_a_node_list_that_is_not_one_is_refused_before_slurm_is_asked(bin_dir):
    with pytest.raises(ValueError):
        reservations.nodes_busy_until("gpu1 -o %u")


def test_a_lab_whose_nodes_slurm_cannot_be_asked_about_keeps_its_reservation_and_says_nothing(bin_dir, course):
    now = timezone.now()
    session = LabSession.objects.create(
        course=course, starts_at=now, ends_at=now + timedelta(hours=1), state=LabSession.State.RESERVED
    )

    labs._say_when_nodes_free(session, "gpu1")

    session.refresh_from_db()
    assert (session.state, session.message) == (LabSession.State.RESERVED, "")
