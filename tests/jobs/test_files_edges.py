"""Edges of reading a job's directory (jobs.files) that the other file tests leave open: the notebook session's
file is never shown in the viewer nor downloaded, the zip of ordinary files needs no Zip64 support to open, a file
the portal reads for itself is refused under a name that cannot be read safely, and the job page reads no more than
the end of a log the job is still writing."""

import io
import os
import re
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse

from courses.scripting import SESSION_FILE_NAME
from jobs import files

SESSION = b'{"url": "http://gpu1:8888/", "token": "secret-token"}'
#: The "version needed to extract" of an entry written without Zip64 extensions (Zip64 needs 45).
NO_ZIP64 = 20


def test_the_viewer_refuses_the_notebook_sessions_file_and_never_shows_its_key(client, finished_job):
    Path(finished_job.workdir, SESSION_FILE_NAME).write_bytes(SESSION)

    response = client.get(reverse("jobs:job-file-view", args=[finished_job.uuid, SESSION_FILE_NAME]))

    assert response.status_code == 404
    page = response.content.decode()
    assert "secret-token" not in page
    assert "this file: it holds the notebook session&#x27;s address and key, which only the portal reads." in page


def test_the_notebook_sessions_file_is_not_downloaded_either(client, finished_job):
    Path(finished_job.workdir, SESSION_FILE_NAME).write_bytes(SESSION)
    Path(finished_job.workdir, "result.txt").write_text("42\n")

    refused = client.get(reverse("jobs:job-file", args=[finished_job.uuid, SESSION_FILE_NAME]))
    ordinary = client.get(reverse("jobs:job-file", args=[finished_job.uuid, "result.txt"]))

    assert refused.status_code == 404
    assert b"secret-token" not in refused.content
    assert ordinary.status_code == 200 and b"".join(ordinary.streaming_content) == b"42\n"


def test_the_zip_of_ordinary_files_opens_in_an_unzip_without_zip64_support(client, finished_job, settings):
    settings.LABQUEUE_ZIP_MAX_BYTES = 1024 * 1024
    Path(finished_job.workdir, "results").mkdir()
    Path(finished_job.workdir, "results", "out.txt").write_text("done\n")
    Path(finished_job.workdir, "job.out").write_text("epoch 1\n")

    response = client.get(reverse("jobs:job-zip", args=[finished_job.uuid]))
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))

    assert archive.testzip() is None
    assert {info.extract_version for info in archive.infolist()} == {NO_ZIP64}


@pytest.mark.parametrize("name", ["a\\b.json", "a\nb.json", "a\x1b[2Jb.json", "a\udcffb.json"])
def test_a_file_the_portal_reads_for_itself_is_refused_under_a_name_that_cannot_be_read_safely(tmp_path, name):
    Path(tmp_path, "ok.json").write_bytes(SESSION)
    Path(tmp_path, name).write_bytes(SESSION)  # it is there: only its name refuses it

    assert files.read_head(str(tmp_path), "ok.json", 100, offered=False) == (SESSION, len(SESSION))
    with pytest.raises(files.UnsafePath):
        files.read_head(str(tmp_path), name, 100, offered=False)


def test_a_log_the_job_writes_to_while_the_page_reads_it_shows_no_more_than_its_last_bytes(
    client, finished_job, settings, monkeypatch
):
    settings.LABQUEUE_LOG_TAIL_BYTES = 1024
    log = Path(finished_job.workdir, finished_job.stdout_name)
    log.write_text("epoch 1\n" * 1000)
    measure, inode = os.fstat, log.stat().st_ino
    written = []

    def size_then_the_job_writes(fd):
        size = measure(fd)
        if size.st_ino == inode:  # the job writes a megabyte each time the page has read the log's size
            with log.open("a") as job_output:
                written.append(job_output.write("LATE " * 200_000))
        return size

    monkeypatch.setattr(files.os, "fstat", size_then_the_job_writes)
    response = client.get(reverse("jobs:job-detail", args=[finished_job.uuid]))

    assert response.status_code == 200 and written
    shown = re.search(r'aria-label="Output">([^<]*)</pre>', response.content.decode()).group(1)
    assert shown.startswith("ATE LATE") and len(shown) == 1024
