"""One version number: pyproject.toml, the code, the changelog and every page's footer agree."""

import re
import tomllib
from pathlib import Path

from django.urls import reverse

import portal

REPO = Path(__file__).resolve().parents[2]


def test_the_code_pyproject_and_the_changelogs_latest_release_have_the_same_version():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    changelog = (REPO / "CHANGELOG.md").read_text()

    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, flags=re.MULTILINE)

    assert pyproject["project"]["version"] == portal.__version__
    assert releases[0] == portal.__version__
    assert "## [Unreleased]" in changelog.split(f"## [{releases[0]}]")[0]


def test_every_page_shows_the_version_signed_in_or_not(client, student):
    sign_in = client.get(reverse("account_login")).content.decode()
    client.force_login(student)
    courses = client.get(reverse("courses:course-list")).content.decode()

    for page in (sign_in, courses):
        assert f'<span id="version">LabQueue {portal.__version__}</span>' in page
