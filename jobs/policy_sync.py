"""Course policy written into Slurm: desired state (portal) vs actual (`sacctmgr show assoc`) -> changes.

Desired, per course: the Slurm account exists; one association per enrolled person with a cluster
username (every role can submit), carrying MaxJobs, MaxSubmitJobs, MaxTRES per job (cpu, mem,
gres/gpu), MaxWall and, with a budget, GrpTRESMins=gres/gpu=<minutes>; the account's own association
carries GrpTRES=gres/gpu=<course-wide cap>. Only course accounts are read or changed, and only
associations of people the portal knows and who are not enrolled are deleted: an association an
operator made for someone the portal has never seen is listed as unmanaged, never removed.

:func:`plan` is pure; :func:`slurm_sync` reads Slurm once per run, applies the plan (unless dry) and
records the run in SlurmSyncRun for the staff drift page.
"""

from __future__ import annotations

import dataclasses
import logging
import shlex
from collections import defaultdict

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from courses.models import Course, Enrollment
from jobs.models import SlurmSyncRun
from jobs.slurm import SlurmError, accounts
from jobs.slurm.accounts import Assoc

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class UserLimits:
    max_jobs: int | None
    max_submit: int | None
    max_tres: dict[str, int]
    max_wall_minutes: int | None
    gpu_minutes: int | None
    qos: str = ""


@dataclasses.dataclass(frozen=True)
class DesiredAccount:
    account: str
    description: str
    course_gpus: int | None
    users: dict[str, UserLimits]


@dataclasses.dataclass(frozen=True)
class Change:
    account: str
    user: str  # "" for the account's own association
    action: str  # add-account, add-user, modify, delete-user
    differences: list[str]
    argv: list[str]

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def as_json(self) -> dict:
        return {**dataclasses.asdict(self), "command": self.command}


def user_limits(course: Course) -> UserLimits:
    return UserLimits(
        max_jobs=course.max_running_jobs_per_student,
        max_submit=course.max_queued_jobs_per_student,
        max_tres={
            "cpu": course.max_cpus_per_job,
            "mem": course.max_mem_mb_per_job,
            "gres/gpu": course.max_gpus_per_job,
        },
        max_wall_minutes=course.max_minutes_per_job,
        gpu_minutes=course.gpu_hours_per_student * 60 if course.gpu_hours_per_student is not None else None,
        qos=course_qos(course),
    )


def course_qos(course: Course) -> str:
    """The QOS the course's jobs are submitted with ("" for Slurm's default)."""
    return course.qos or getattr(settings, "LABQUEUE_COURSE_QOS", "")


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
        limits = user_limits(course)
        result.append(
            DesiredAccount(
                account=account,
                description=f"{course.code} {course.term}"[:60],
                course_gpus=course.max_gpus_course,
                users={netid: limits for netid in sorted(enrolled[course.pk])},
            )
        )
    return result, errors


def _limit(value: int | None) -> str:
    return "-1" if value is None else str(value)


def _tres_text(wanted: dict[str, int], actual: dict[str, int]) -> str:
    """The `set` value that makes `actual` equal `wanted`: changed keys, and -1 to clear extra ones."""
    items = []
    for key in sorted(set(wanted) | set(actual)):
        if wanted.get(key) != actual.get(key):
            value = wanted.get(key)
            items.append(f"{key}=-1" if value is None else f"{key}={value}M" if key == "mem" else f"{key}={value}")
    return ",".join(items)


def _show(value) -> str:
    if value is None or value == {}:
        return "none"
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in sorted(value.items()))
    return str(value)


def _user_sets(limits: UserLimits, actual: Assoc) -> tuple[dict[str, str], list[str]]:
    sets, differences = {}, []

    def differ(label: str, key: str, wanted, have, text: str) -> None:
        if wanted != have:
            sets[key] = text
            differences.append(f"{label}: {_show(have)} -> {_show(wanted)}")

    differ("MaxJobs", "MaxJobs", limits.max_jobs, actual.max_jobs, _limit(limits.max_jobs))
    differ("MaxSubmitJobs", "MaxSubmitJobs", limits.max_submit, actual.max_submit, _limit(limits.max_submit))
    differ("MaxTRESPerJob", "MaxTRES", limits.max_tres, actual.max_tres, _tres_text(limits.max_tres, actual.max_tres))
    differ("MaxWall", "MaxWall", limits.max_wall_minutes, actual.max_wall_minutes, _limit(limits.max_wall_minutes))
    wanted_mins = {"gres/gpu": limits.gpu_minutes} if limits.gpu_minutes is not None else {}
    differ(
        "GrpTRESMins", "GrpTRESMins", wanted_mins, actual.grp_tres_mins, _tres_text(wanted_mins, actual.grp_tres_mins)
    )
    if limits.qos and limits.qos not in actual.qos:
        sets["QOS+"] = limits.qos
        differences.append(f"QOS: {','.join(actual.qos) or 'none'} -> also {limits.qos}")
    return sets, differences


def plan(*, cluster: str, desired: list[DesiredAccount], actual: list[Assoc], known_users: set[str]):
    """The changes that make Slurm match `desired`, and the unmanaged associations (pure).

    `actual` holds the associations of the desired accounts only; `known_users` are the cluster usernames
    the portal knows (only they are ever removed from a course account).
    """
    changes: list[Change] = []
    unmanaged: list[dict] = []
    by_account: dict[str, dict[str, Assoc]] = defaultdict(dict)
    for assoc in actual:
        if assoc.partition:
            unmanaged.append({"account": assoc.account, "user": assoc.user, "why": f"partition {assoc.partition}"})
            continue
        by_account[assoc.account][assoc.user] = assoc
    for want in desired:
        have = by_account.get(want.account, {})
        own = have.get("")
        if own is None:
            changes.append(
                Change(
                    want.account,
                    "",
                    "add-account",
                    ["account missing"],
                    accounts.account_add_argv(cluster=cluster, account=want.account, description=want.description),
                )
            )
            own = Assoc(account=want.account, user="")
        wanted_grp = {"gres/gpu": want.course_gpus} if want.course_gpus is not None else {}
        have_grp = dict(own.grp_tres)
        if wanted_grp != have_grp:
            text = _tres_text(wanted_grp, have_grp)
            changes.append(
                Change(
                    want.account,
                    "",
                    "modify",
                    [f"GrpTRES: {_show(have_grp)} -> {_show(wanted_grp)}"],
                    accounts.account_modify_argv(cluster=cluster, account=want.account, values={"GrpTRES": text}),
                )
            )
        missing = [user for user in want.users if user not in have]
        if missing:
            changes.append(
                Change(
                    want.account,
                    ",".join(missing),
                    "add-user",
                    [f"association missing for {u}" for u in missing],
                    accounts.user_add_argv(cluster=cluster, account=want.account, users=missing),
                )
            )
        for user, limits in want.users.items():
            sets, differences = _user_sets(limits, have.get(user) or Assoc(account=want.account, user=user))
            if sets:
                values = {key.rstrip("+"): value for key, value in sets.items() if not key.endswith("+")}
                argv = accounts.user_modify_argv(cluster=cluster, account=want.account, user=user, values=values)
                argv += [f"QOS+={sets['QOS+']}"] if "QOS+" in sets else []
                changes.append(Change(want.account, user, "modify", differences, argv))
        for user in sorted(set(have) - set(want.users) - {""}):
            if user in known_users:
                changes.append(
                    Change(
                        want.account,
                        user,
                        "delete-user",
                        [f"{user} is not enrolled"],
                        accounts.user_delete_argv(cluster=cluster, account=want.account, user=user),
                    )
                )
            else:
                unmanaged.append({"account": want.account, "user": user, "why": "not a portal user"})
    return changes, unmanaged


def _known_users() -> set[str]:
    return set(get_user_model().objects.exclude(netid__isnull=True).exclude(netid="").values_list("netid", flat=True))


def slurm_sync(
    *, course_slugs: list[str] | None = None, dry_run: bool = False, trigger: str = "command"
) -> SlurmSyncRun:
    """Reconcile these courses (all when None) with Slurm; record the run. Raises SlurmUnavailable
    when sacctmgr does not answer before anything was read (the run row then says so)."""
    cluster = settings.LABQUEUE_SLURM_CLUSTER
    courses = Course.objects.exclude(slurm_account="").order_by("pk")
    if course_slugs is not None:
        # Every course on the chosen courses' accounts, so that an account another course shares is seen as shared.
        courses = courses.filter(slurm_account__in=courses.filter(slug__in=course_slugs).values("slurm_account"))
    desired, errors = desired_accounts(list(courses))
    run = SlurmSyncRun.objects.create(trigger=trigger, dry_run=dry_run, courses=[d.account for d in desired])
    try:
        actual = accounts.assoc_list(cluster=cluster, accounts=[d.account for d in desired])
    except SlurmError as error:
        run.errors = [*errors, f"Could not read Slurm's associations: {error}"]
        run.finished_at = timezone.now()
        run.save(update_fields=["errors", "finished_at"])
        raise
    changes, unmanaged = plan(cluster=cluster, desired=desired, actual=actual, known_users=_known_users())
    if not dry_run:
        for change in changes:
            try:
                accounts.sacctmgr_apply(change.argv)
            except SlurmError as error:
                errors.append(f"{change.command}: {error}")
                log.warning("sync_slurm: %s failed: %s", change.command, error)
    run.changes = [change.as_json() for change in changes]
    run.unmanaged = unmanaged
    run.errors = errors
    run.finished_at = timezone.now()
    run.save(update_fields=["changes", "unmanaged", "errors", "finished_at"])
    return run


def slurm_sync_last() -> SlurmSyncRun | None:
    """The latest finished reconciliation (what the staff drift page shows)."""
    return SlurmSyncRun.objects.filter(finished_at__isnull=False).first()
