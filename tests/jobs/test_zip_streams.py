"""Download all (zip) is made while it is sent: the response streams, nothing of the job's files is read before
the first chunk is asked for, each file is read when its turn comes, and the zip holds the right bytes.

How fast the first byte arrives and how little memory a 500 MB zip takes are measured, not asserted:
scripts/bench_zip.py.

No cluster: the job is submitted through the view, then its directory gets the files a finished job
would have left there (tests/jobs/conftest.py finished_job).
"""

import io
import os
import zipfile
from pathlib import Path

import pytest
from django.http import FileResponse, StreamingHttpResponse
from django.urls import reverse

from jobs import files
from jobs.models import Job

MB = 1024 * 1024


@pytest.fixture
def job(finished_job) -> Job:
    return finished_job


@pytest.fixture
def opened(monkeypatch) -> list[str]:
    """The paths files.open_file opened, in order."""
    seen = []
    open_file = files.open_file

    def recording(root: str, relative: str) -> int:
        seen.append(relative)
        return open_file(root, relative)

    monkeypatch.setattr(files, "open_file", recording)
    return seen


def test_the_zip_streams_reading_each_file_only_when_its_turn_comes(client, job, settings, opened):
    settings.LABQUEUE_ZIP_MAX_BYTES = 10 * MB
    contents = {"a/first.bin": os.urandom(3 * MB), "b/second.txt": b"second\n" * 1000, "c.out": b"last\n"}
    for name, content in contents.items():
        Path(job.workdir, name).parent.mkdir(parents=True, exist_ok=True)
        Path(job.workdir, name).write_bytes(content)

    response = client.get(reverse("jobs:job-zip", args=[job.uuid]))

    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert isinstance(response, StreamingHttpResponse) and not isinstance(response, FileResponse)
    assert response["Content-Disposition"] == f'attachment; filename="hello-{str(job.uuid)[:8]}.zip"'
    assert opened == [], "no file is read before the first chunk is asked for"
    chunks = iter(response.streaming_content)
    first = next(chunks)
    assert first.startswith(b"PK\x03\x04") and opened == ["a/first.bin"]
    sizes = [len(first)]
    for chunk in chunks:
        sizes.append(len(chunk))
        first += chunk
    assert opened == ["a/first.bin", "b/second.txt", "c.out"]
    assert len(sizes) > 10 and max(sizes) <= files.ZIP_CHUNK_BYTES + 1024, "many chunks, none the whole zip"
    archive = zipfile.ZipFile(io.BytesIO(first))
    assert archive.testzip() is None
    assert {name.split("/", 1)[1]: archive.read(name) for name in archive.namelist()} == contents
    assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_DEFLATED}


def test_a_job_over_the_cap_is_refused_before_any_file_is_read(client, job, settings, opened):
    settings.LABQUEUE_ZIP_MAX_BYTES = 1 * MB
    Path(job.workdir, "big.bin").write_bytes(b"x" * (MB + 1))

    response = client.get(reverse("jobs:job-zip", args=[job.uuid]))

    assert response.status_code == 302 and opened == []


def test_a_file_removed_after_the_walk_is_left_out_and_the_zip_is_still_whole(client, job, settings, monkeypatch):
    settings.LABQUEUE_ZIP_MAX_BYTES = 1 * MB
    for name in ("a.txt", "b.txt", "c.txt"):
        Path(job.workdir, name).write_text(f"{name}\n")

    response = client.get(reverse("jobs:job-zip", args=[job.uuid]))
    os.unlink(Path(job.workdir, "b.txt"))  # the job removes it while the zip is on its way
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))

    assert archive.testzip() is None
    assert sorted(name.split("/", 1)[1] for name in archive.namelist()) == ["a.txt", "c.txt"]
