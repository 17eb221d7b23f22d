"""The job page's poll: a job whose page would not change answers 304 Not Modified without opening its logs or
walking its directory; a change of the job (its row, its history, its output) answers 200 with every part,
each carrying a digest of its content; the access check comes before any 304."""

import ctypes
import os
import re
import struct
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, Status
from jobs.services import job_note_add, job_transition
from tests.conftest import job_row

pytestmark = pytest.mark.django_db

IN_OPEN = 0x20
PART = re.compile(r'<(?:div|span) id="live-([a-z-]+)" data-v="([0-9a-f]+)" hx-swap-oob="true">')


class Opened:
    """Which of some files and directories a process opened (Linux inotify, IN_OPEN): what the kernel saw,
    whichever code opened them."""

    def __init__(self, *paths: Path) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        self.names = {}
        for path in paths:
            watch = self.libc.inotify_add_watch(self.fd, str(path).encode(), IN_OPEN)
            assert watch >= 0, os.strerror(ctypes.get_errno())
            self.names[watch] = path.name

    def since_last(self) -> set[str]:
        seen = set()
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return seen
        while data:
            watch, _mask, _cookie, length = struct.unpack_from("iIII", data)
            seen.add(self.names[watch])
            data = data[16 + length :]
        return seen

    def close(self) -> None:
        os.close(self.fd)


@pytest.fixture
def running(student, assignment, job_root) -> Job:
    """A running job with output so far and a results folder, as a job directory holds them."""
    workdir = job_root / "student1" / "job"
    (workdir / "results").mkdir(parents=True)
    (workdir / "job.out").write_text("epoch 1 loss 0.9\n")
    (workdir / "job.err").write_text("")
    (workdir / "results" / "model.txt").write_text("weights\n")
    now = timezone.now()
    return job_row(
        student,
        assignment,
        workdir=str(workdir),
        status=Status.RUNNING,
        slurm_state="RUNNING",
        slurm_job_id="4242",
        submitted_at=now,
        started_at=now,
        checked_at=now,
    )


@pytest.fixture
def opened(running):
    workdir = Path(running.workdir)
    watcher = Opened(workdir / "job.out", workdir / "job.err", workdir / "results")
    yield watcher
    watcher.close()


def poll(client, job: Job, etag: str | None = None):
    headers = {"HTTP_IF_NONE_MATCH": etag} if etag else {}
    return client.get(reverse("jobs:job-status", args=[job.uuid]), **headers)


def test_a_poll_of_an_unchanged_job_answers_304_without_opening_its_logs_or_walking_its_directory(
    client, student, running, opened, django_assert_max_num_queries
):
    client.force_login(student)
    first = poll(client, running)
    assert first.status_code == 200 and first["ETag"]
    assert opened.since_last() == {"job.out", "job.err", "results"}, "the full answer reads the logs and walks"

    with django_assert_max_num_queries(4):  # session, user, job, its newest history entry
        again = poll(client, running, first["ETag"])

    assert again.status_code == 304 and again.content == b""
    assert again["ETag"] == first["ETag"]
    assert opened.since_last() == set(), "a 304 opens neither log nor any folder below the job directory"


def test_the_job_page_gives_its_poll_the_etag_so_the_first_poll_of_an_unchanged_job_is_a_304(client, student, running):
    client.force_login(student)
    page = client.get(reverse("jobs:job-detail", args=[running.uuid])).content.decode()
    etag = re.search(r'id="job-poll"[^>]* data-etag="&quot;([0-9a-f]+)&quot;"', page).group(1)

    assert poll(client, running, f'"{etag}"').status_code == 304


def test_a_poll_after_the_status_changed_answers_200_with_the_new_status(client, student, running):
    client.force_login(student)
    etag = poll(client, running)["ETag"]
    job_transition(job=running, to=Status.COMPLETED, cause="Slurm reports COMPLETED.", ended_at=timezone.now())

    answer = poll(client, running, etag)

    assert answer.status_code == 200
    text = answer.content.decode()
    assert '<span class="status status-completed">Completed</span>' in text
    assert "<title>Completed · Hello GPU · attempt 1 · LabQueue</title>" in text
    assert '<div id="job-poll" hx-swap-oob="true"></div>' in text, "the page stops polling"
    assert "ETag" not in answer, "a finished job's page may change without its row (hints, a retry)"


def test_a_poll_after_the_job_wrote_output_answers_200_with_the_new_output(client, student, running):
    client.force_login(student)
    etag = poll(client, running)["ETag"]
    with open(Path(running.workdir) / "job.out", "a") as log:
        log.write("epoch 2 loss 0.5\n")

    answer = poll(client, running, etag)

    assert answer.status_code == 200 and answer["ETag"] != etag
    assert "epoch 2 loss 0.5" in answer.content.decode()


def test_a_note_from_course_staff_shows_in_the_history_on_the_next_poll(client, student, ta, running):
    client.force_login(student)
    etag = poll(client, running)["ETag"]
    job_note_add(job=running, author=ta, text="Looks good so far.")

    answer = poll(client, running, etag)

    assert answer.status_code == 200 and "Course staff added a note." in answer.content.decode()


def test_only_the_parts_that_changed_get_a_new_digest(client, student, running):
    """static/labqueue.js swaps in a part only when its digest differs: the Cancel form (with its per-request
    CSRF token) keeps its digest while the status changes, so the button is not replaced under the user."""
    Job.objects.filter(pk=running.pk).update(status=Status.PENDING, slurm_state="PENDING", reason="Priority")
    client.force_login(student)
    before = dict(PART.findall(poll(client, running).content.decode()))
    running.refresh_from_db()
    job_transition(job=running, to=Status.RUNNING, cause="Slurm reports RUNNING.", slurm_state="RUNNING")

    after = dict(PART.findall(poll(client, running).content.decode()))

    parts = {"label", "state", "summary", "actions", "stdout", "stderr", "waiting", "files", "history"}
    assert set(before) == set(after) == parts
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {"label", "state", "summary", "waiting", "history"}  # why it waited is gone
    assert 'id="cancel-job"' in poll(client, running).content.decode()


def test_a_classmate_gets_404_not_304_even_with_the_jobs_etag(client, student, classmate, running, opened):
    client.force_login(student)
    etag = poll(client, running)["ETag"]
    opened.since_last()
    client.force_login(classmate)

    answer = poll(client, running, etag)

    assert answer.status_code == 404
    assert opened.since_last() == set()


def test_an_anonymous_poll_with_an_etag_is_sent_to_the_login_page(client, student, running):
    client.force_login(student)
    etag = poll(client, running)["ETag"]
    client.logout()

    answer = poll(client, running, etag)

    assert answer.status_code == 302 and answer["Location"].startswith(reverse("account_login"))


def test_course_staff_have_an_etag_of_their_own_view(client, student, ta, running):
    """The TA's page has no Cancel button: the owner's ETag does not stand for it."""
    client.force_login(student)
    etag = poll(client, running)["ETag"]
    client.force_login(ta)

    answer = poll(client, running, etag)

    assert answer.status_code == 200 and answer["ETag"] != etag
    assert "Cancel job" not in answer.content.decode()


def test_the_poll_takes_only_get(client, student, running):
    client.force_login(student)

    assert client.post(reverse("jobs:job-status", args=[running.uuid])).status_code == 405
