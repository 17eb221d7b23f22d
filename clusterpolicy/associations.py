"""Course policy written into Slurm: reconcile the desired associations (portal) with the actual ones.

Desired, per course: the Slurm account exists; one association per enrolled person with a cluster
username (every role can submit), carrying MaxJobs, MaxSubmitJobs, MaxTRES per job (cpu, mem,
gres/gpu), MaxWall and, with a budget, GrpTRESMins=gres/gpu=<minutes>, and may use the course's QOS and
the site's lab QOS (LABQUEUE_LAB_QOS, lab jobs' --qos); the account's own association carries
GrpTRES=gres/gpu=<course-wide cap>. Every number is held to operations staff's ceilings and the
QOS to their allow-list (courses.selectors.course_ceilings), whatever the course row says. Only course
accounts are read or changed, and only associations of people the portal knows and who are not enrolled
are deleted: an association an operator made for someone the portal has never seen is listed as
unmanaged, never removed.

:func:`associations_reconcile` (worker side: the `associations_reconcile` task and the
`reconcile_associations` command) reads Slurm once per run, applies the pure
:func:`clusterpolicy.plan.plan` (unless dry) and records the run in AssociationRun for the staff drift page.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from clusterpolicy.models import AssociationRun
from clusterpolicy.plan import DesiredAccount, UserLimits, plan
from clusterpolicy.selectors import course_qos
from courses.clusters import cluster_name, federation_members, is_federated
from courses.models import Course, Enrollment
from courses.policy import held_to_ceilings
from courses.selectors import course_ceilings
from slurm import SlurmError, accounts

log = logging.getLogger(__name__)


def user_limits(values: dict[str, int | None], qos: str, lab_qos: str = "") -> UserLimits:
    """One student's association limits from the course policy's numbers (already held to the ceilings), and
    the QOS they may use: the course's and the lab jobs' (both added to the association's list)."""
    gpu_hours = values["gpu_hours_per_student"]
    return UserLimits(
        max_jobs=values["max_running_jobs_per_student"],
        max_submit=values["max_queued_jobs_per_student"],
        max_tres={
            "cpu": values["max_cpus_per_job"],
            "mem": values["max_mem_mb_per_job"],
            "gres/gpu": values["max_gpus_per_job"],
        },
        max_wall_minutes=values["max_minutes_per_job"],
        gpu_minutes=gpu_hours * 60 if gpu_hours is not None else None,
        qos=qos,
        lab_qos=lab_qos,
    )


def desired_accounts(courses: list[Course]) -> tuple[list[DesiredAccount], list[str]]:
    """The desired state of these courses' accounts, and errors (an account shared by two courses)."""
    by_account: dict[str, list[Course]] = defaultdict(list)
    for course in courses:
        by_account[course.slurm_account].append(course)
    enrolled: dict[int, set[str]] = defaultdict(set)
    rows = Enrollment.objects.filter(course__in=courses, user__netid__isnull=False).exclude(user__netid="")
    for course_id, netid in rows.values_list("course_id", "user__netid"):
        enrolled[course_id].add(netid)
    result, errors = [], []
    for account, group in sorted(by_account.items()):
        if len(group) > 1:
            names = ", ".join(course.slug for course in group)
            errors.append(f"Slurm account {account} is used by several courses ({names}): left unchanged.")
            continue
        course = group[0]
        # Never more than operations staff allow, whatever the row says (saved before a ceiling, or directly).
        values, held = held_to_ceilings(course=course, ceilings=course_ceilings(course=course))
        errors += held
        if course.qos and course_qos(course) != course.qos:
            errors.append(f"{course.slug}: QOS {course.qos} is not allowed by operations staff; not given to anyone.")
        limits = user_limits(values, course_qos(course), lab_qos=settings.LABQUEUE_LAB_QOS)
        result.append(
            DesiredAccount(
                account=account,
                description=f"{course.code} {course.term}"[:60],
                course_gpus=values["max_gpus_course"],
                users={netid: limits for netid in sorted(enrolled[course.pk])},
            )
        )
    return result, errors


def _slurm_now(
    planned: dict[str, tuple[list[DesiredAccount], list[str]]],
) -> tuple[dict[str, str], dict[str, tuple[list[DesiredAccount], list[accounts.Assoc]]]]:
    """What Slurm holds of the courses' accounts: those that exist but LabQueue did not make (account ->
    organization; accounts are the site's, not one cluster's, so one sacctmgr show serves every cluster), and on
    each cluster the accounts LabQueue manages with their associations (one sacctmgr show each)."""
    elsewhere = accounts.accounts_made_elsewhere(
        sorted({want.account for desired, _ in planned.values() for want in desired})
    )
    now = {}
    for cluster, (desired, _problems) in planned.items():
        ours = [want for want in desired if want.account not in elsewhere]
        now[cluster] = (ours, accounts.assoc_list(cluster=cluster, accounts=[want.account for want in ours]))
    return elsewhere, now


def _made_elsewhere(elsewhere: dict[str, str]) -> list[dict]:
    """Existing accounts courses name that LabQueue did not make (say, a research group's, named in a course copy):
    the portal adds no one to them, removes no one and changes none of their limits."""
    left = []
    for account, organization in sorted(elsewhere.items()):
        log.warning(
            "reconcile_associations: account %s (organization %s) not made by LabQueue: left alone",
            account,
            organization,
        )
        why = (
            f"the account exists and was not made by LabQueue (organization {organization or 'none'}): left alone; "
            f"give the course an account of its own, or (research computing) hand this one over with `sacctmgr "
            f"modify account where name={account} set organization={accounts.ORGANIZATION}`"
        )
        left.append({"account": account, "user": "", "why": why})
    return left


def _known_users() -> set[str]:
    return set(get_user_model().objects.exclude(netid__isnull=True).exclude(netid="").values_list("netid", flat=True))


def associations_reconcile(
    *, course_slugs: list[str] | None = None, dry_run: bool = False, trigger: str
) -> AssociationRun:
    """Reconcile these courses (all when None) with Slurm; record the run. Raises SlurmUnavailable
    when sacctmgr does not answer before anything was read (the run row then says so)."""
    courses = Course.objects.exclude(slurm_account="").order_by("pk")
    if course_slugs is not None:
        # Every course on the chosen courses' accounts, so that an account another course shares is seen as shared.
        courses = courses.filter(slurm_account__in=courses.filter(slug__in=course_slugs).values("slurm_account"))
    on_cluster: dict[str, list[Course]] = {}
    for course in courses:  # each cluster's associations are its own (sacctmgr ... cluster=<name>)
        # A federated course's jobs may run on any member: its account, users and limits are on each of them.
        for cluster in federation_members() if is_federated(course.cluster) else [cluster_name(course.cluster)]:
            on_cluster.setdefault(cluster, []).append(course)
    planned = {cluster: desired_accounts(listed) for cluster, listed in sorted(on_cluster.items())}
    errors = [error for _desired, problems in planned.values() for error in problems]
    run = AssociationRun.objects.create(
        trigger=trigger, dry_run=dry_run, courses=[d.account for desired, _ in planned.values() for d in desired]
    )
    try:
        elsewhere, now = _slurm_now(planned)
    except SlurmError as error:
        run.errors = [*errors, f"Could not read Slurm's associations: {error}"]
        run.finished_at = timezone.now()
        run.save(update_fields=["errors", "finished_at"])
        raise
    changes, unmanaged, known_users = [], _made_elsewhere(elsewhere), _known_users()
    for cluster, (desired, actual) in now.items():
        found, not_ours = plan(cluster=cluster, desired=desired, actual=actual, known_users=known_users)
        changes += found
        unmanaged += not_ours
    if not dry_run:
        for change in changes:
            try:
                accounts.sacctmgr_apply(change.argv)
            except SlurmError as error:
                errors.append(f"{change.command}: {error}")
                log.warning("reconcile_associations: %s failed: %s", change.command, error)
    run.changes = [change.as_json() for change in changes]
    run.unmanaged = unmanaged
    run.errors = errors
    run.finished_at = timezone.now()
    run.save(update_fields=["changes", "unmanaged", "errors", "finished_at"])
    return run
