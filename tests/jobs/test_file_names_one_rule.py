"""A file's name decides once (jobs.files.name_problem) whether the file is offered: the job page's list, the
viewer, the single download and the zip agree for every name, odd ones included.

No cluster: the job is submitted through the view, then its directory gets the files a finished job
would have left there (tests/jobs/conftest.py finished_job).
"""

import io
import os
import zipfile
from pathlib import Path
from urllib.parse import quote

import pytest
from django.urls import reverse

from jobs.models import Job

#: Names a job can write that the portal must not offer, and what the page says about each.
REFUSED = {
    "new\nline.txt": "its name holds a line break or another control character",
    "esc\x1b[31mred.txt": "its name holds a line break or another control character",
    "..\\..\\startup.bat": "its name holds a backslash, which Windows reads as a folder separator",
    os.fsdecode(b"latin1-caf\xe9.txt"): "its name is not valid UTF-8 text",
}
OFFERED = ["results/out.txt", "café ünïcode.txt", "with space.txt"]


@pytest.fixture
def job(finished_job) -> Job:
    for name in [*REFUSED, *OFFERED]:
        path = Path(finished_job.workdir, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"content of {name!r}\n".encode("utf-8", "surrogateescape"))
    return finished_job


def listing(client, job: Job) -> tuple[dict, str]:
    response = client.get(reverse("jobs:job-detail", args=[job.uuid]))
    assert response.status_code == 200
    return {entry.path: entry for entry in response.context["files"]}, response.content.decode()


def zip_names(client, job: Job) -> set[str]:
    response = client.get(reverse("jobs:job-zip", args=[job.uuid]))
    assert response.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    return {name.split("/", 1)[1] for name in archive.namelist()}


def file_url(name: str, job: Job, kind: str) -> str:
    """The address the page would link, built by hand: reverse() refuses a name with a line break."""
    base = reverse(f"jobs:{kind}", args=[job.uuid, "x"]).removesuffix("x")
    return base + quote(name.encode("utf-8", "surrogateescape"), safe="/")


def test_the_list_the_viewer_the_download_and_the_zip_offer_exactly_the_same_files(client, student, job):
    client.force_login(student)

    entries, page = listing(client, job)
    linked = {path for path, entry in entries.items() if entry.linkable}

    assert linked == set(OFFERED)
    assert zip_names(client, job) == linked, "the zip holds what the page links, nothing more"
    for name in OFFERED:
        assert client.get(file_url(name, job, "job-file-view")).status_code == 200
        assert client.get(file_url(name, job, "job-file")).status_code == 200
    for name, problem in REFUSED.items():
        assert entries[name].problem == problem
        assert problem in page, "the page says why the file is not offered"
        assert client.get(file_url(name, job, "job-file-view")).status_code == 404
        assert client.get(file_url(name, job, "job-file")).status_code == 404


def test_the_viewer_and_the_download_say_why_a_listed_file_with_an_odd_name_is_not_offered(client, student, job):
    client.force_login(student)

    for kind in ("job-file-view", "job-file"):
        response = client.get(file_url("esc\x1b[31mred.txt", job, kind))
        assert response.status_code == 404
        assert "its name holds a line break or another control character" in response.content.decode()
        assert "run the job again" in response.content.decode()
