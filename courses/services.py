import hashlib
import json
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from courses.clusters import lab_cluster, labs_on
from courses.models import (
    COURSE_POLICY_FIELDS,
    Assignment,
    AssignmentVersion,
    Course,
    CourseCeiling,
    Dataset,
    Enrollment,
    Hint,
    LabSeries,
    LabSession,
    Role,
    StarterFile,
    VersionStarterFile,
)
from courses.policy import ceiling_problems, lab_limit_problems, lab_overlap_problem
from courses.roster import RosterPlan, RosterRow, roster_plan
from courses.selectors import assignment_version_latest, course_ceilings, lab_reservable_nodes, roster_current
from portal.celery import app

LAB_SCHEDULE_LOCK = 4_202_604  # pg_advisory_xact_lock key for lab scheduling
LAB_OPEN = (LabSession.State.SCHEDULED, LabSession.State.RESERVED)


@transaction.atomic
def assignment_save(
    *,
    course: Course,
    fields: dict,
    datasets: list[Dataset],
    assignment: Assignment | None = None,
    starter_file: UploadedFile | None = None,
    actor=None,
) -> Assignment:
    """Create or update an assignment from validated fields (AssignmentForm checks them). A changed script
    template, parameter schema, data set choice or starter file is kept as a new version with its author
    (`actor`). A starter file with a name the assignment has replaces it; the version before keeps the old one."""
    assignment = assignment or Assignment(course=course)
    for name, value in fields.items():
        setattr(assignment, name, value)
    assignment.full_clean(exclude=["parameters"])
    assignment.save()
    assignment.datasets.set(datasets)
    if starter_file is not None:
        StarterFile.objects.filter(assignment=assignment, name=starter_file.name).delete()
        StarterFile.objects.create(assignment=assignment, name=starter_file.name, file=starter_file)
    assignment_version_current(assignment=assignment, author=actor)
    return assignment


@dataclass(frozen=True)
class _Contents:
    """What a version keeps: starter files as (name, stored file name), data sets by primary key."""

    script_template: str
    parameters: list
    check_script: str
    starter_files: tuple[tuple[str, str], ...]
    dataset_ids: frozenset[int]

    def digest(self) -> str:
        """A fingerprint of the contents, kept with a version so that the next job compares it in one query."""
        fields = [
            self.script_template,
            self.parameters,
            self.check_script,
            self.starter_files,
            sorted(self.dataset_ids),
        ]
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def _contents_now(assignment: Assignment) -> _Contents:
    """The assignment as saved now. Read from the database, not from `assignment`, which may have been loaded
    before an instructor saved a change."""
    now = Assignment.objects.only("script_template", "parameters", "check_script").get(pk=assignment.pk)
    starters = StarterFile.objects.filter(assignment_id=assignment.pk).order_by("name")
    return _Contents(
        script_template=now.script_template,
        parameters=now.parameters,
        check_script=now.check_script,
        starter_files=tuple(starters.values_list("name", "file")),
        dataset_ids=frozenset(Dataset.objects.filter(assignments=assignment.pk).values_list("pk", flat=True)),
    )


def _contents_of(version: AssignmentVersion) -> _Contents:
    return _Contents(
        script_template=version.script_template,
        parameters=version.parameters,
        check_script=version.check_script,
        starter_files=tuple(version.starter_files.order_by("name").values_list("name", "file")),
        dataset_ids=frozenset(version.datasets.values_list("pk", flat=True)),
    )


def _sha256(name: str, stored: str) -> str:
    digest = hashlib.sha256()
    try:
        with default_storage.open(stored, "rb") as data:
            for chunk in data.chunks():
                digest.update(chunk)
    except OSError:
        raise ValidationError(
            f"The starter file '{name}' is missing from the portal's storage. "
            "The instructor must upload it again before jobs of this assignment can run."
        )
    return digest.hexdigest()


@transaction.atomic(savepoint=False)
def assignment_version_current(*, assignment: Assignment, author=None) -> AssignmentVersion:
    """The version holding the assignment's script template, parameters, starter files and data sets as saved
    now: the latest one, or a new one (by `author`) when any of them changed, e.g. saved in the Django admin."""
    now = _contents_now(assignment)
    latest = assignment_version_latest(assignment=assignment)
    if latest and _holds(latest, now):
        return latest
    Assignment.objects.select_for_update().filter(pk=assignment.pk).exists()  # one new version at a time
    latest = assignment_version_latest(assignment=assignment)
    now = _contents_now(assignment)
    if latest and _holds(latest, now):
        return latest
    version = AssignmentVersion.objects.create(
        assignment=assignment,
        number=latest.number + 1 if latest else 1,
        script_template=now.script_template,
        parameters=now.parameters,
        check_script=now.check_script,
        author=author,
        contents_digest=now.digest(),
    )
    version.datasets.set(now.dataset_ids)
    VersionStarterFile.objects.bulk_create(
        VersionStarterFile(version=version, name=name, file=stored, sha256=_sha256(name, stored))
        for name, stored in now.starter_files
    )
    return version


def _holds(version: AssignmentVersion, now: _Contents) -> bool:
    """The version holds the assignment's contents `now`: compared by digest, or in full (two queries more) for
    a version saved before digests were kept, which gets its digest then."""
    if version.contents_digest:
        return version.contents_digest == now.digest()
    if _contents_of(version) != now:
        return False
    AssignmentVersion.objects.filter(pk=version.pk).update(contents_digest=now.digest())
    return True


@transaction.atomic
def enrollment_set(*, user, course: Course, role: str) -> Enrollment:
    enrollment, _ = Enrollment.objects.update_or_create(user=user, course=course, defaults={"role": role})
    associations_reconcile_on_commit(course=course, trigger="enrollment")
    return enrollment


@transaction.atomic
def enrollments_grant(*, user, course_roles: dict[str, str]) -> list[Enrollment]:
    """Enroll `user` with the given roles (course slug -> role), e.g. from IdP groups. Unknown slugs are skipped."""
    courses = Course.objects.filter(slug__in=course_roles)
    return [enrollment_set(user=user, course=course, role=course_roles[course.slug]) for course in courses]


@transaction.atomic
def roster_apply(*, course: Course, plan: RosterPlan, actor) -> RosterPlan:
    """Apply a previewed roster plan: all of it or, on any problem, nothing.

    People the portal does not know yet get an account with their netid and no password, so their
    first campus sign-in links to it (portal.auth) instead of creating someone new.
    """
    if not plan.ok:
        raise ValidationError("The roster has errors; nothing was changed.")
    for row in plan.adds:
        Enrollment.objects.create(user=_roster_user(row), course=course, role=row.role)
    for change in plan.role_changes:
        updated = Enrollment.objects.filter(course=course, user__netid=change.row.netid, role=change.old_role)
        if updated.update(role=change.row.role) != 1:
            raise ValidationError(f"{change.row.netid}'s enrollment changed since the preview; nothing was changed.")
    for drop in plan.drops:
        deleted, _ = Enrollment.objects.filter(course=course, user__netid=drop.netid, role=drop.role).delete()
        if deleted != 1:
            raise ValidationError(f"{drop.netid}'s enrollment changed since the preview; nothing was changed.")
    if plan.adds or plan.drops:
        associations_reconcile_on_commit(course=course, trigger="enrollment")
    return plan


@transaction.atomic
def roster_confirm(*, course: Course, text: str, digest: str, keep: frozenset[str], actor) -> tuple[str, RosterPlan]:
    """Apply the previewed roster `text` if the course's roster is still the one it was previewed against.

    Confirmations of one course take turns (a lock on the course row), so a double click applies the plan
    once; the second finds the roster already as the CSV says. Returns ("applied" | "in place" | "changed",
    the plan as it stands now).
    """
    Course.objects.select_for_update().filter(pk=course.pk).exists()
    plan = roster_plan(text, roster_current(course=course), keep=keep)
    if plan.ok and plan.digest() == digest:
        return "applied", roster_apply(course=course, plan=plan, actor=actor)
    if plan.ok and not plan.has_changes:
        return "in place", plan
    return "changed", plan


def _roster_user(row: RosterRow):
    User = get_user_model()
    user = User.objects.filter(netid=row.netid).first()
    if user is not None:
        return user
    username, n = row.netid, 1
    while User.objects.filter(username=username).exists():
        username, n = f"{row.netid}{n}", n + 1
    user = User(username=username, netid=row.netid, email=row.email, first_name=row.first_name, last_name=row.last_name)
    user.set_unusable_password()
    user.full_clean()
    try:
        with transaction.atomic():  # another course's roster may add the same person at this moment
            user.save()
    except IntegrityError:
        return User.objects.get(netid=row.netid)
    return user


def associations_reconcile_on_commit(*, course: Course, trigger: str) -> None:
    """After the transaction commits, ask the worker to write the course's policy and roster into Slurm.

    The task is named, not imported: courses imports no app above it (clusterpolicy.tasks.associations_reconcile
    does the work).
    """
    kwargs = {"course_id": course.pk, "trigger": trigger}
    transaction.on_commit(lambda: app.send_task("clusterpolicy.tasks.associations_reconcile", kwargs=kwargs))


def _labs_tick_on_commit() -> None:
    """After the transaction commits, ask the worker for a lab tick (jobs.tasks.labs_tick, named, not imported)."""
    transaction.on_commit(lambda: app.send_task("jobs.tasks.labs_tick"))


@transaction.atomic
def course_policy_update(*, course: Course, fields: dict, actor) -> Course:
    """Save the course's policy (CoursePolicyForm checked it) and have Slurm follow. Never above
    operations staff's ceilings (checked again here, whoever calls)."""
    problems = ceiling_problems(
        policy=fields, ceilings=course_ceilings(course=course), contact=settings.LABQUEUE_OPERATIONS_CONTACT
    )
    if problems:
        raise ValidationError(problems)
    for name, value in fields.items():
        setattr(course, name, value)
    course.full_clean()
    course.save()
    associations_reconcile_on_commit(course=course, trigger="policy")
    return course


def _lab_capacity(*, cluster: str) -> tuple[int, str]:
    nodes = len(lab_reservable_nodes(cluster=cluster))
    if settings.LABQUEUE_RESERVATION_STRATEGY == "gpus":
        return nodes * settings.LABQUEUE_GPUS_PER_NODE, "GPU"
    return nodes, "node"


def _lab_lock() -> None:
    """One lab scheduling at a time (an advisory lock on PostgreSQL), so two labs cannot both fit."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LAB_SCHEDULE_LOCK])


def _lab_problems(*, course: Course, starts_at: datetime, ends_at: datetime, nodes: int, gpus: int | None) -> list[str]:
    """Why a lab cannot be scheduled: operations staff's limits, then the labs overlapping it on the course's
    cluster (each cluster reserves its own nodes)."""
    cluster = lab_cluster(course.cluster)  # a federated course's labs are on the own cluster
    capacity, unit = _lab_capacity(cluster=cluster)
    size = gpus if unit == "GPU" else nodes
    limits = lab_limit_problems(
        starts_at=starts_at,
        ends_at=ends_at,
        size=size or 0,
        unit=unit,
        now=timezone.now(),
        max_minutes=settings.LABQUEUE_LAB_MAX_MINUTES,
        max_size=settings.LABQUEUE_LAB_MAX_GPUS if unit == "GPU" else settings.LABQUEUE_LAB_MAX_NODES,
        capacity=capacity,
        max_days_ahead=settings.LABQUEUE_LAB_MAX_DAYS_AHEAD,
        contact=settings.LABQUEUE_OPERATIONS_CONTACT,
    )
    if limits:
        return list(limits.values())
    overlapping = LabSession.objects.filter(
        labs_on(cluster), state__in=LAB_OPEN, starts_at__lt=ends_at, ends_at__gt=starts_at
    )
    others = [
        (s.starts_at, s.ends_at, (s.gpus or 0) if unit == "GPU" else s.nodes, s.course.code)
        for s in overlapping.select_related("course")
    ]
    problem = lab_overlap_problem(
        starts_at=starts_at, ends_at=ends_at, size=size, others=others, capacity=capacity, unit=unit
    )
    return [problem] if problem else []


@transaction.atomic
def lab_session_schedule(
    *, course: Course, starts_at: datetime, ends_at: datetime, nodes: int, gpus: int | None = None, actor=None
) -> LabSession:
    """Schedule a lab, refused when it and the labs overlapping it need more than the reservable nodes
    (or GPUs), or when it is beyond operations staff's limits."""
    _lab_lock()
    same = LabSession.objects.filter(
        course=course, state__in=LAB_OPEN, starts_at=starts_at, ends_at=ends_at, nodes=nodes, gpus=gpus
    ).first()
    if same is not None:  # the same lab scheduled again (a double click, a reload): it is the one lab
        return same
    if problems := _lab_problems(course=course, starts_at=starts_at, ends_at=ends_at, nodes=nodes, gpus=gpus):
        raise ValidationError(problems)
    session = LabSession(course=course, starts_at=starts_at, ends_at=ends_at, nodes=nodes, gpus=gpus, created_by=actor)
    session.full_clean()
    session.save()
    _labs_tick_on_commit()
    return session


def lab_series_dates(*, weekday: int, first: date, last: date, skipped: frozenset[date]) -> list[date]:
    """The dates of a weekly lab: each `weekday` (0 Monday) from `first` to `last`, less the skipped ones."""
    day = first + timedelta(days=(weekday - first.weekday()) % 7)
    dates = []
    while day <= last:
        if day not in skipped:
            dates.append(day)
        day += timedelta(weeks=1)
    return dates


@transaction.atomic
def lab_series_schedule(
    *,
    course: Course,
    weekday: int,
    start_time: time,
    minutes: int,
    first_date: date,
    last_date: date,
    skipped: frozenset[date] = frozenset(),
    nodes: int,
    gpus: int | None = None,
    actor=None,
) -> LabSeries:
    """A weekly lab: every session is checked as a single lab is (limits, room on the cluster, not in the past)
    and all are made, or none: the refusal names each date that does not fit, to skip or move."""
    _lab_lock()
    zone = timezone.get_current_timezone()
    dates = lab_series_dates(weekday=weekday, first=first_date, last=last_date, skipped=skipped)
    if not dates:
        raise ValidationError("No date between the first and the last falls on that weekday (less the skipped ones).")
    sessions, problems = [], []
    for day in dates:
        starts_at = datetime.combine(day, start_time, tzinfo=zone)
        ends_at = starts_at + timedelta(minutes=minutes)
        found = _lab_problems(course=course, starts_at=starts_at, ends_at=ends_at, nodes=nodes, gpus=gpus)
        if starts_at < timezone.now():
            found.insert(0, "This time has passed.")
        problems += [f"{day:%a %Y-%m-%d}: {problem}" for problem in found]
        sessions.append(LabSession(course=course, starts_at=starts_at, ends_at=ends_at, nodes=nodes, gpus=gpus))
    if problems:
        raise ValidationError(
            [f"No lab of the series was scheduled: {len(problems)} problem(s). Skip or move these dates."] + problems
        )
    series = LabSeries.objects.create(
        course=course,
        weekday=weekday,
        start_time=start_time,
        minutes=minutes,
        first_date=first_date,
        last_date=last_date,
        skipped=sorted(day.isoformat() for day in skipped),
        created_by=actor,
    )
    for session in sessions:
        session.series, session.created_by = series, actor
    LabSession.objects.bulk_create(sessions)
    _labs_tick_on_commit()
    return series


@transaction.atomic
def lab_series_cancel_rest(*, session: LabSession, actor) -> int:
    """Cancel this session of a weekly lab and every later one still to come; how many were cancelled."""
    if session.series_id is None:
        raise ValidationError("This lab is not part of a weekly series.")
    rest = LabSession.objects.filter(series_id=session.series_id, starts_at__gte=session.starts_at, state__in=LAB_OPEN)
    cancelled = rest.update(state=LabSession.State.CANCELLED)
    if not cancelled:
        raise ValidationError("These labs have already ended or been cancelled.")
    _labs_tick_on_commit()
    return cancelled


@transaction.atomic
def lab_session_cancel(*, session: LabSession, actor) -> None:
    """Cancel a lab that has not ended; the worker removes its reservation if it has one."""
    if not LabSession.objects.filter(pk=session.pk, state__in=LAB_OPEN).update(state=LabSession.State.CANCELLED):
        raise ValidationError("This lab has already ended or been cancelled.")
    session.state = LabSession.State.CANCELLED
    _labs_tick_on_commit()


#: What a copy of an assignment leaves behind: its identity, its course and the dates of its term.
_NOT_COPIED = {"id", "uuid", "course", "created_at", "updated_at", "opens_at", "due_at"}


@transaction.atomic
def course_copy(*, source: Course, fields: dict, actor) -> Course:
    """A new course for another term from `source`: its policy, ceilings, data sets, assignments (current
    script, parameters, resources, starter files, checks, late policy) and hints; not its people, jobs, labs,
    usage or dates. `fields` name the new course (slug, code, title, term, slurm_account); `actor` teaches it.
    It runs on the same cluster as `source`."""
    course = Course(**{name: getattr(source, name) for name in COURSE_POLICY_FIELDS}, cluster=source.cluster, **fields)
    course.full_clean()
    course.save()
    ceiling = CourseCeiling.objects.filter(course=source).first()
    if ceiling is not None:
        ceiling.pk, ceiling.course = None, course
        ceiling.save()
    datasets = {
        old.pk: Dataset.objects.create(course=course, name=old.name, path=old.path, description=old.description)
        for old in source.datasets.all()
    }
    assignments = {}
    for old in source.assignments.prefetch_related("datasets", "starter_files"):
        new = Assignment(course=course)
        for model_field in Assignment._meta.concrete_fields:
            if model_field.name not in _NOT_COPIED:
                setattr(new, model_field.attname, getattr(old, model_field.attname))
        new.save()
        new.datasets.set([datasets[dataset.pk] for dataset in old.datasets.all()])
        for starter in old.starter_files.all():  # stored files are never written over: the copy shares them
            StarterFile.objects.create(assignment=new, name=starter.name, file=starter.file.name)
        assignment_version_current(assignment=new, author=actor)
        assignments[old.pk] = new
    for hint in source.hints.all():
        Hint.objects.create(
            course=course,
            assignment=assignments.get(hint.assignment_id),
            pattern=hint.pattern,
            state=hint.state,
            message=hint.message,
        )
    Enrollment.objects.create(user=actor, course=course, role=Role.INSTRUCTOR)
    return course
