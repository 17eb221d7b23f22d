"""The log page: a long stdout one 64 KB page at a time, and bytes that are not UTF-8 shown as
replacement marks rather than failing the page.

No cluster: the job is submitted through the view, then its directory gets the log a finished job
would have left there.
"""

from pathlib import Path

import pytest
from django.urls import reverse

from jobs.models import Job

PAGE = 64 * 1024
REPLACEMENT = "\ufffd"


@pytest.fixture
def job(finished_job) -> Job:
    return finished_job


def write_stdout(job: Job, content: bytes) -> None:
    Path(job.workdir, job.stdout_name).write_bytes(content)


def log_page(client, job: Job, page: int) -> str:
    response = client.get(reverse("jobs:job-log", args=[job.uuid, "out"]), {"page": page})
    assert response.status_code == 200
    return response.content.decode()


def test_a_long_log_shows_only_its_own_page_and_the_next_page_continues_it(client, job):
    write_stdout(job, b"a" * PAGE + b"SECOND PAGE STARTS\n" + b"b" * 100)

    first = log_page(client, job, 1)
    second = log_page(client, job, 2)

    assert "page 1 of 2" in first and "a" * PAGE in first
    assert "SECOND PAGE STARTS" not in first and "b" * 100 not in first
    assert "page 2 of 2" in second and "SECOND PAGE STARTS\n" + "b" * 100 in second
    assert "a" * 100 not in second


def test_a_character_cut_by_the_page_boundary_shows_as_a_replacement_mark(client, job):
    write_stdout(job, b"a" * (PAGE - 1) + "é".encode() + b"after\n")  # é's two bytes straddle the boundary

    first = log_page(client, job, 1)
    second = log_page(client, job, 2)

    assert "a" * (PAGE - 1) + REPLACEMENT + "</pre>" in first
    assert 'aria-label="job.out">' + REPLACEMENT + "after\n</pre>" in second


def test_binary_output_in_the_log_shows_as_replacement_marks_not_an_error(client, job):
    write_stdout(job, b"loss 0.31\n\xff\xfe\x80 progress\nloss 0.29\n")

    text = log_page(client, job, 1)

    assert "loss 0.31\n" + REPLACEMENT * 3 + " progress\nloss 0.29\n" in text
