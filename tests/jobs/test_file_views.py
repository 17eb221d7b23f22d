"""Viewing a job's files in the browser: text escaped and capped, CSV as a table, images only when their
bytes match their name and with a strict policy, SVG only downloaded, notebooks rendered and sanitised.

No cluster: the job is submitted through the view, then its directory gets the files a finished job
would have left there (tests/jobs/conftest.py finished_job).
"""

import json
import os
import re
import struct
import zlib
from pathlib import Path

import pytest
from django.urls import reverse

from jobs import files, previews
from jobs.models import Job


def png(width: int = 3, height: int = 2) -> bytes:
    """A real PNG (grey pixels), small enough to write by hand."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def notebook(cells: list[dict]) -> bytes:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


@pytest.fixture
def job(finished_job) -> Job:
    return finished_job


def write(job: Job, name: str, content: bytes) -> Path:
    path = Path(job.workdir, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def view(client, job: Job, name: str):
    return client.get(reverse("jobs:job-file-view", args=[job.uuid, name]))


def image(client, job: Job, name: str):
    return client.get(reverse("jobs:job-file-image", args=[job.uuid, name]))


def test_a_text_file_is_shown_escaped_with_undecodable_bytes_replaced(client, job):
    write(job, "logs/train.log", b"epoch 1 <script>alert('x')</script> loss \xff\xfe 0.5\n")

    page = view(client, job, "logs/train.log")

    assert page.status_code == 200
    body = page.content.decode()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in body
    assert "<script>alert" not in body
    assert "loss \ufffd\ufffd 0.5" in body
    assert reverse("jobs:job-file", args=[job.uuid, "logs/train.log"]) in body
    assert 'id="cut"' not in body


def test_only_the_first_256_kib_of_a_large_text_file_is_shown_and_the_page_says_so(client, job):
    write(job, "big.out", b"a" * previews.TEXT_MAX_BYTES + b"TAIL-NOT-SHOWN")

    page = view(client, job, "big.out")

    body = page.content.decode()
    assert 'id="cut"' in body and "only its first 256.0\xa0KB are shown" in body
    assert "a" * previews.TEXT_MAX_BYTES in body
    assert "TAIL-NOT-SHOWN" not in body


def test_a_file_of_exactly_the_cap_is_shown_whole_without_a_cut_message(client, job):
    write(job, "exact.txt", b"b" * previews.TEXT_MAX_BYTES)
    assert 'id="cut"' not in view(client, job, "exact.txt").content.decode()


def test_a_csv_is_shown_as_a_table_of_its_first_rows_and_columns_with_formulas_as_text(client, job):
    header = ",".join(f"col{c}" for c in range(60))
    rows = [",".join(f"r{r}c{c}" for c in range(60)) for r in range(250)]
    rows[0] = '"=HYPERLINK(""http://evil.example"",""x"")",<b>bold</b>' + rows[0][len("r0c0,r0c1") :]
    write(job, "results/metrics.csv", "\n".join([header, *rows]).encode())

    body = view(client, job, "results/metrics.csv").content.decode()

    table = body[body.index('id="csv-table"') : body.index("</table>")]
    assert table.count("<tr>") == 1 + previews.CSV_MAX_ROWS
    assert "<th>col49</th>" in table and "col50" not in table
    assert "<td>r199c49</td>" in table and "r200c0" not in table and "r0c50" not in table
    assert "<td>=HYPERLINK(&quot;http://evil.example&quot;,&quot;x&quot;)</td>" in table
    assert "<td>&lt;b&gt;bold&lt;/b&gt;</td>" in table
    assert 'id="table-cut"' in body


def test_a_small_csv_fits_without_a_note_that_rows_were_left_out(client, job):
    write(job, "small.csv", b"step,loss\n1,0.5\n2,0.25\n")
    body = view(client, job, "small.csv").content.decode()
    assert "<td>0.25</td>" in body and 'id="table-cut"' not in body


def test_a_csv_the_csv_module_cannot_read_is_shown_as_text(client, job):
    write(job, "odd.csv", b'a,b\n"' + b"x" * 200_000 + b'"\n')  # one field over csv's 128 KiB field limit
    body = view(client, job, "odd.csv").content.decode()
    assert 'id="table-error"' in body and 'id="file-text"' in body


def test_a_png_is_served_inline_with_a_strict_type_and_policy(client, job):
    data = png()
    write(job, "plots/loss.png", data)

    page = view(client, job, "plots/loss.png").content.decode()
    response = image(client, job, "plots/loss.png")

    assert f'src="{reverse("jobs:job-file-image", args=[job.uuid, "plots/loss.png"])}"' in page
    assert response.status_code == 200
    assert response.content == data
    assert response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "default-src 'none'; sandbox"
    assert response["Content-Disposition"] == 'inline; filename="loss.png"'


@pytest.mark.parametrize(
    ("name", "head", "content_type"),
    [
        ("photo.JPG", b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        ("photo.jpeg", b"\xff\xd8\xff\xdb", "image/jpeg"),
        ("anim.gif", b"GIF89a\x01\x00", "image/gif"),
        ("old.gif", b"GIF87a\x01\x00", "image/gif"),
        ("pic.webp", b"RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"),
    ],
)
def test_each_image_type_is_served_as_the_type_its_bytes_prove(client, job, name, head, content_type):
    write(job, name, head + b"\x00" * 32)
    assert image(client, job, name)["Content-Type"] == content_type


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("fake.png", b"<html><script>alert(1)</script></html>"),
        ("jpeg-bytes.png", b"\xff\xd8\xff\xe0\x00\x10JFIF"),
        ("fake.jpg", b"\x89PNG\r\n\x1a\n"),
        ("fake.gif", b"GIF90a"),
        ("fake.webp", b"RIFF\x10\x00\x00\x00WAVEfmt "),
        ("not-riff.webp", b"RIFX\x10\x00\x00\x00WEBPVP8 "),
    ],
)
def test_a_file_whose_bytes_are_not_the_image_its_name_says_is_not_served_as_an_image(client, job, name, content):
    write(job, name, content)

    response = image(client, job, name)
    page = view(client, job, name).content.decode()

    assert response.status_code == 404
    assert not response["Content-Type"].startswith("image/")
    assert "<img" not in page and 'id="not-shown"' in page


def test_an_image_over_the_size_cap_is_not_shown(client, job, monkeypatch):
    monkeypatch.setattr(previews, "IMAGE_MAX_BYTES", 100)
    write(job, "large.png", png() + b"\x00" * 100)
    write(job, "fits.png", png(1, 1))

    assert image(client, job, "large.png").status_code == 404
    page = view(client, job, "large.png").content.decode()
    assert "too large to show" in page and "<img" not in page
    assert image(client, job, "fits.png").status_code == 200


def test_an_svg_is_only_downloaded_never_served_as_an_image(client, job):
    write(job, "drawing.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')

    page = view(client, job, "drawing.svg").content.decode()
    download = client.get(reverse("jobs:job-file", args=[job.uuid, "drawing.svg"]))

    assert image(client, job, "drawing.svg").status_code == 404
    assert "<img" not in page and "SVG images can hold scripts" in page and "alert(1)" not in page
    assert download["Content-Disposition"].startswith("attachment;")


def test_other_files_are_offered_as_download_only(client, job):
    write(job, "model.bin", b"\x00<script>alert(1)</script>")

    page = view(client, job, "model.bin").content.decode()

    assert "cannot show this kind of file" in page and "alert(1)" not in page
    assert reverse("jobs:job-file", args=[job.uuid, "model.bin"]) in page
    assert image(client, job, "model.bin").status_code == 404


def test_a_notebook_is_rendered_with_its_markdown_and_scripts_stripped(client, job):
    cells = [
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": "# Training summary\nLoss went *down*. [x](javascript:alert(2))",
        },
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": 1,
            "source": "show()",
            "outputs": [
                {
                    "output_type": "display_data",
                    "metadata": {},
                    "data": {
                        "text/html": "<b>kept</b><script>alert('from-output')</script><img src=x onerror=alert(3)>",
                        "application/javascript": "alert('js-output')",
                    },
                },
                {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBORw0KGgo="}},
            ],
        },
    ]
    write(job, "analysis.ipynb", notebook(cells))

    body = view(client, job, "analysis.ipynb").content.decode()

    rendered = body[body.index('id="notebook"') :]
    assert "<h1>Training summary</h1>" in rendered and "<em>down</em>" in rendered
    assert "<b>kept</b>" in rendered
    assert "<script" not in rendered and "js-output" not in rendered
    assert "onerror" not in rendered and "javascript:" not in rendered
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in rendered


def test_a_notebook_page_allows_data_images_in_its_policy(client, job):
    write(job, "empty.ipynb", notebook([]))
    response = view(client, job, "empty.ipynb")
    assert "img-src 'self' data:" in response["Content-Security-Policy"]


def test_a_broken_notebook_is_shown_as_text(client, job):
    write(job, "broken.ipynb", b'{"cells": [<script>alert(1)</script>')

    body = view(client, job, "broken.ipynb").content.decode()

    assert 'id="notebook-error"' in body and 'id="notebook"' not in body
    assert "{&quot;cells&quot;: [&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_a_notebook_over_the_cap_is_shown_as_text(client, job, monkeypatch):
    monkeypatch.setattr(previews, "NOTEBOOK_MAX_BYTES", 10)
    write(job, "big.ipynb", notebook([]))
    body = view(client, job, "big.ipynb").content.decode()
    assert 'id="notebook-error"' in body and "&quot;nbformat&quot;: 4" in body


def code_cell(source: str, outputs: list[dict] | None = None) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": source, "outputs": outputs or []}


def markdown_cell(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def test_only_the_first_cells_of_a_long_notebook_are_rendered_and_the_page_says_so(client, job, monkeypatch):
    monkeypatch.setattr(previews, "NOTEBOOK_MAX_CELLS", 2)
    write(job, "long.ipynb", notebook([markdown_cell("first-cell"), markdown_cell("second-cell")]))
    write(job, "longer.ipynb", notebook([markdown_cell(f"cell-{n}-text") for n in range(3)]))

    assert 'id="cut"' not in view(client, job, "long.ipynb").content.decode()
    body = view(client, job, "longer.ipynb").content.decode()
    assert "This notebook has 3 cells; only its first 2 are shown." in body
    assert "cell-1-text" in body and "cell-2-text" not in body


def html_output(kind: str, text: str) -> dict:
    return {"output_type": "display_data", "metadata": {}, "data": {kind: text}}


@pytest.mark.parametrize(
    ("cap", "cell", "reason"),
    [
        ("NOTEBOOK_MAX_CODE", lambda n: code_cell("x" * n), "its code cells hold more than"),
        ("NOTEBOOK_MAX_MARKUP", lambda n: markdown_cell("m" * n), "its markdown, HTML and tracebacks"),
        ("NOTEBOOK_MAX_MARKUP", lambda n: code_cell("", [html_output("text/html", "h" * n)]), "its markdown, HTML"),
        ("NOTEBOOK_MAX_MARKUP", lambda n: code_cell("", [html_output("text/markdown", "k" * n)]), "its markdown"),
        (
            "NOTEBOOK_MAX_MARKUP",
            lambda n: code_cell("", [{"output_type": "error", "ename": "E", "evalue": "", "traceback": ["t" * n]}]),
            "tracebacks",
        ),
    ],
)
def test_a_notebook_too_costly_to_render_is_shown_as_text(client, job, monkeypatch, cap, cell, reason):
    monkeypatch.setattr(previews, cap, 1000)
    write(job, "at-cap.ipynb", notebook([cell(500), cell(500)]))
    write(job, "over-cap.ipynb", notebook([cell(500), cell(501)]))

    assert 'id="notebook"' in view(client, job, "at-cap.ipynb").content.decode()
    body = view(client, job, "over-cap.ipynb").content.decode()
    assert 'id="notebook"' not in body and 'id="notebook-error"' in body and reason in body
    assert "&quot;nbformat&quot;: 4" in body


def test_a_symlink_a_hard_link_or_a_path_outside_the_job_is_refused_with_a_page(client, job, tmp_path):
    outside = tmp_path / "secret.png"
    outside.write_bytes(png())
    os.symlink(outside, Path(job.workdir, "leak.png"))
    os.symlink("/etc/passwd", Path(job.workdir, "leak.txt"))
    write(job, "sub/ok.txt", b"fine")
    os.link(write(job, "linked.txt", b"two names"), Path(job.workdir, "sub", "second-name.txt"))

    for name in ("leak.txt", "leak.png", "sub/../leak.txt", "../job.sh", "missing.txt", "linked.txt", "sub"):
        page = view(client, job, name)
        assert page.status_code == 404
        assert "There is no file at this name in this job" in page.content.decode()
    assert image(client, job, "leak.png").status_code == 404
    assert view(client, job, "sub/ok.txt").status_code == 200


def test_another_student_gets_404_and_course_staff_may_view(client, job, classmate, ta):
    write(job, "notes.txt", b"private notes")
    write(job, "plot.png", png())
    client.force_login(classmate)
    assert view(client, job, "notes.txt").status_code == 404
    assert image(client, job, "plot.png").status_code == 404
    client.force_login(ta)
    assert b"private notes" in view(client, job, "notes.txt").content
    assert image(client, job, "plot.png").status_code == 200


def test_viewing_accepts_only_get(client, job):
    write(job, "notes.txt", b"x")
    assert client.post(reverse("jobs:job-file-view", args=[job.uuid, "notes.txt"])).status_code == 405
    assert client.post(reverse("jobs:job-file-image", args=[job.uuid, "notes.txt"])).status_code == 405


def test_read_head_reads_at_most_the_limit_and_tells_the_whole_size(tmp_path):
    (tmp_path / "data.bin").write_bytes(b"0123456789")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "small.txt").write_bytes(b"abc")
    os.symlink(tmp_path / "data.bin", tmp_path / "link.bin")

    assert files.read_head(str(tmp_path), "data.bin", 4) == (b"0123", 10)
    assert files.read_head(str(tmp_path), "sub/small.txt", 100) == (b"abc", 3)
    assert files.read_head(str(tmp_path), "data.bin", 0) == (b"", 10)
    for unsafe in ("link.bin", "../data.bin", "missing"):
        with pytest.raises(files.UnsafePath):
            files.read_head(str(tmp_path), unsafe, 4)


def test_the_job_page_links_each_file_to_its_view(client, job):
    write(job, "results/metrics.csv", b"step,loss\n")
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    view = reverse("jobs:job-file-view", args=[job.uuid, "results/metrics.csv"])
    assert f'href="{view}" aria-label="View results/metrics.csv">View</a>' in page


def test_a_file_named_with_a_carriage_return_is_not_viewed_as_the_job_page_does_not_link_it(client, job):
    write(job, "plot\r1.png", png())

    page = view(client, job, "plot\r1.png")
    response = image(client, job, "plot\r1.png")

    assert page.status_code == 404 and "<img" not in page.content.decode()
    assert "its name holds a line break or another control character" in page.content.decode()
    assert response.status_code == 404


def test_the_job_page_lists_each_file_with_its_size(client, job):
    write(job, "results/weights.bin", b"\0" * 2048)
    write(job, "job.out", b"epoch 1\n")

    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()

    sizes = dict(re.findall(r'aria-label="View ([^"]+)">View</a></td><td>([^<]+)</td>', page))
    assert sizes == {"job.out": "8\xa0bytes", "results/weights.bin": "2.0\xa0KB"}


def test_a_job_folder_the_portal_may_not_open_is_explained_on_the_page_and_a_missing_one_is_not(
    client, job, monkeypatch
):
    """As root this process opens every folder; the refusal the service account meets (a student who closed
    the folder to the portal's group, tests/security/test_service_account_end_to_end.py) is the kernel's
    EACCES, given here for the job's folder alone."""
    real_open = os.open

    def refusing(path, flags, *args, **kwargs):
        if path == job.workdir:
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert 'id="files-unreadable"' in page and "(the portal cannot read it)" in page

    monkeypatch.setattr(os, "open", real_open)
    os.rmdir(job.workdir)  # not made yet: nothing to read, nothing to explain
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert 'id="files-unreadable"' not in page
