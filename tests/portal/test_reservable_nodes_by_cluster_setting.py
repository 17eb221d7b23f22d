"""LABQUEUE_RESERVABLE_NODES_BY_CLUSTER (the nodes labs may reserve on each other cluster) is checked at the start:
a JSON object of node name lists, naming only clusters of LABQUEUE_SLURM_OTHER_CLUSTERS."""

from tests.portal.test_settings_from_environment import manage_check


def test_nodes_of_the_other_clusters_listed_there_start():
    run = manage_check(
        LABQUEUE_SLURM_OTHER_CLUSTERS="lab2", LABQUEUE_RESERVABLE_NODES_BY_CLUSTER='{"lab2": ["gpu3", "gpu4"]}'
    )

    assert run.returncode == 0, run.stderr


def test_a_list_where_an_object_of_lists_belongs_stops_the_start():
    run = manage_check(LABQUEUE_SLURM_OTHER_CLUSTERS="lab2", LABQUEUE_RESERVABLE_NODES_BY_CLUSTER='["gpu3", "gpu4"]')

    assert run.returncode != 0
    assert (
        "ImproperlyConfigured: LABQUEUE_RESERVABLE_NODES_BY_CLUSTER must be a JSON object of node name lists, "
        'e.g. {"lab2": ["gpu3"]}.'
    ) in run.stderr


def test_a_cluster_not_among_the_other_clusters_stops_the_start_naming_it():
    run = manage_check(LABQUEUE_RESERVABLE_NODES_BY_CLUSTER='{"lab3": ["gpu5"]}')

    assert run.returncode != 0
    assert (
        "ImproperlyConfigured: LABQUEUE_RESERVABLE_NODES_BY_CLUSTER names lab3, not in LABQUEUE_SLURM_OTHER_CLUSTERS: "
        "list each other cluster there too."
    ) in run.stderr
