"""The pages an instructor reads (policy, labs, the course's usage) say what a limit does in plain words; the
Slurm term is only in its secondary element (templates/_slurm_term.html), for those who know Slurm."""

import pytest
from bs4 import BeautifulSoup
from django.urls import reverse

from courses.models import CourseCeiling

#: Slurm's own names for limits, accounting fields and versions: an instructor should not need them.
SLURM_TERMS = (
    "GrpTRESMins",
    "GrpTRES",
    "MaxSubmitJobs",
    "MaxJobs",
    "MaxTRES",
    "MaxWall",
    "AllocTRES",
    "TRESBillingWeights",
    "gres/gpu",
    "association",
    "23.11",
)

INSTRUCTOR_PAGES = [
    ("courses:course-policy", "GrpTRESMins=gres/gpu"),
    ("courses:lab-list", "reservation TRES=gres/gpu"),
    ("reports:course-report", "AllocTRES"),
    ("reports:course-statement", "TRESBillingWeights"),
    ("reports:my-usage", "TRESBillingWeights"),
]


def _split(html: str) -> tuple[str, list[str]]:
    """The page's main text without the Slurm-term elements, and those elements' texts."""
    main = BeautifulSoup(html, "html.parser").find("main") or BeautifulSoup(html, "html.parser")
    secondary = [element.extract().get_text(" ", strip=True) for element in main.select(".slurm-term")]
    return main.get_text(" ", strip=True), secondary


@pytest.mark.parametrize(("page", "term"), INSTRUCTOR_PAGES)
def test_an_instructor_page_names_slurm_terms_only_in_the_secondary_line(client, instructor, settings, page, term):
    settings.LABQUEUE_RESERVATION_STRATEGY = "gpus"  # the lab form then shows its GPUs field too
    client.force_login(instructor)

    response = client.get(reverse(page, args=["cs101"]))

    assert response.status_code == 200
    text, secondary = _split(response.content.decode())
    assert [word for word in SLURM_TERMS if word in text] == []
    assert any(term in line for line in secondary), secondary
    assert all(line.startswith("Slurm: ") for line in secondary)


def test_each_policy_limit_says_what_it_does_and_names_its_slurm_term_beneath(client, instructor):
    client.force_login(instructor)

    html = client.get(reverse("courses:course-policy", args=["cs101"])).content.decode()

    field = BeautifulSoup(html, "html.parser").find("input", id="id_gpu_hours_per_student").parent
    assert field.select_one(".helptext").get_text(strip=True) == "GPU-hours each student may use this term."
    assert field.select_one(".slurm-term").get_text(strip=True) == "Slurm: GrpTRESMins=gres/gpu (minutes)"


def test_a_limit_under_a_ceiling_keeps_its_plain_words_beside_the_ceiling(client, instructor, course):
    CourseCeiling.objects.create(course=course, gpu_hours_per_student=50)
    client.force_login(instructor)

    html = client.get(reverse("courses:course-policy", args=["cs101"])).content.decode()

    field = BeautifulSoup(html, "html.parser").find("input", id="id_gpu_hours_per_student").parent
    assert field.select_one(".helptext").get_text(strip=True) == (
        "GPU-hours each student may use this term. At most 50 (ceiling set by operations staff)."
    )
