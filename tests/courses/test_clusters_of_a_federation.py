"""Which -M each Slurm command of a course's job carries (courses.clusters), with and without a federation."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from courses.clusters import accounting_clusters, federation_members, lab_cluster, slurm_cluster
from courses.models import other_cluster_validator


def test_without_a_federation_a_course_goes_to_its_cluster_and_the_own_one_needs_no_dash_m(settings) -> None:
    settings.LABQUEUE_SLURM_OTHER_CLUSTERS = ["lab2"]
    settings.LABQUEUE_SLURM_FEDERATION = ""

    assert [slurm_cluster(name) for name in ("", "lab2")] == ["", "lab2"]
    assert federation_members() == []
    with pytest.raises(ValidationError, match="not one of this site's other clusters"):
        other_cluster_validator("labfed")


def test_in_a_federation_only_a_federated_course_goes_without_dash_m(settings) -> None:
    settings.LABQUEUE_SLURM_CLUSTER = "lab"
    settings.LABQUEUE_SLURM_OTHER_CLUSTERS = ["lab2"]
    settings.LABQUEUE_SLURM_FEDERATION = "labfed"

    assert [slurm_cluster(name) for name in ("", "lab2", "labfed")] == ["lab", "lab2", ""]
    assert accounting_clusters("labfed") == "lab,lab2" and accounting_clusters("") == "lab"
    assert lab_cluster("labfed") == "" and lab_cluster("lab2") == "lab2"
    assert federation_members() == ["lab", "lab2"]
    other_cluster_validator("labfed")  # a course may be bound to it
