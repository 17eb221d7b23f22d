"""Where a course's jobs go on a site with several clusters (README, "Several clusters"): read by both sides (the
web side to say where a job ran, the worker side for the -M of each Slurm command).

A course is bound to the portal's own cluster (Course.cluster empty), to another cluster of the same slurmdbd
(LABQUEUE_SLURM_OTHER_CLUSTERS), or to the federation of them all (LABQUEUE_SLURM_FEDERATION). In a federation
every job sent without -M becomes federated, so a job that must stay on its cluster carries -M <its cluster>,
the own cluster's name included; a federated course's jobs carry none. Settings are read when a function runs.
"""

from django.conf import settings
from django.db.models import Q


def is_federated(cluster: str) -> bool:
    """A course (or job) bound to the federation: offered to every cluster of it, runs where it fits first."""
    return bool(cluster) and cluster == settings.LABQUEUE_SLURM_FEDERATION


def federation_members() -> list[str]:
    """The clusters of the federation, from settings (no Slurm call): the own one, then the others."""
    if not settings.LABQUEUE_SLURM_FEDERATION:
        return []
    return [settings.LABQUEUE_SLURM_CLUSTER, *settings.LABQUEUE_SLURM_OTHER_CLUSTERS]


def slurm_cluster(cluster: str) -> str:
    """The `-M` value for the Slurm commands of a job of a course bound to `cluster` ("": no -M, the local
    controller). Without a federation: the course's cluster as it is. In one: none for a federated course, and
    the cluster's own name for every other course (the own cluster's too), so that it stays there."""
    if not settings.LABQUEUE_SLURM_FEDERATION:
        return cluster
    if is_federated(cluster):
        return ""
    return cluster or settings.LABQUEUE_SLURM_CLUSTER


def accounting_clusters(cluster: str) -> str:
    """The `sacct -M` value for a job of a course bound to `cluster`: a federated job's record is on the member
    that ran it, so every member is read ("lab,lab2"; sacct without -M reads the local cluster only, and the
    origin's REVOKED copy appears only with -D); any other job's, as slurm_cluster."""
    return ",".join(federation_members()) if is_federated(cluster) else slurm_cluster(cluster)


def lab_cluster(cluster: str) -> str:
    """The cluster (as Course.cluster names it, "" for the own) where a course's lab sessions are reserved. A
    reservation exists on one cluster only, so a federated course's labs (and the jobs sent into them) are on the
    portal's own cluster; every other course's labs are on its cluster."""
    return "" if is_federated(cluster) else cluster


def courses_with_labs_on(cluster: str) -> list[str]:
    """The Course.cluster values whose labs are on `cluster` (lab_cluster): the own cluster's include the
    federation's."""
    return [cluster] if cluster else ["", settings.LABQUEUE_SLURM_FEDERATION]


def labs_on(cluster: str) -> Q:
    """The lab sessions on `cluster` (as lab_cluster names it): a reserved lab is where Slurm holds its reservation
    (LabSession.reserved_on), kept when its course moves to another cluster; any other lab is on its course's."""
    return Q(reserved_on=cluster_name(cluster)) | Q(reserved_on="", course__cluster__in=courses_with_labs_on(cluster))


def session_cluster(session) -> str:
    """The cluster a lab session's reservation is on, or will be made on (as lab_cluster names it)."""
    if not session.reserved_on:
        return lab_cluster(session.course.cluster)
    return "" if session.reserved_on == settings.LABQUEUE_SLURM_CLUSTER else session.reserved_on


def cluster_name(cluster: str) -> str:
    """A cluster's ClusterName, for people: the own cluster's name for ""."""
    return cluster or settings.LABQUEUE_SLURM_CLUSTER
