"""Course rosters from CSV: parse, check every row, and diff against the current enrollments.

Pure: no database (each netid is checked against the system's user database by
portal.identity: a roster never names root or a system account). The view shows
the plan as a preview; `courses.services.roster_apply` applies
it in one transaction. A roster with any bad row yields no plan to apply at all.

The CSV has a header row naming the columns ``netid``, ``email``, ``name`` and ``role`` (any order,
any case; extra columns are ignored). Roles: student, ta, instructor. Blank lines are skipped.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from courses.models import Role
from portal.identity import netid_refusal
from portal.models import POSIX_NAME

COLUMNS = ("netid", "email", "name", "role")
MAX_ROWS = 5000
ROLE_NAMES = {
    "student": Role.STUDENT,
    "students": Role.STUDENT,
    "ta": Role.TA,
    "teaching assistant": Role.TA,
    "assistant": Role.TA,
    "instructor": Role.INSTRUCTOR,
    "teacher": Role.INSTRUCTOR,
}
_POSIX = re.compile(POSIX_NAME)


@dataclass(frozen=True)
class RosterRow:
    line: int
    netid: str
    email: str
    first_name: str
    last_name: str
    role: str


@dataclass(frozen=True)
class RosterError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"Line {self.line}: {self.message}" if self.line else self.message


@dataclass(frozen=True)
class RoleChange:
    row: RosterRow
    old_role: str


@dataclass(frozen=True)
class Drop:
    netid: str
    role: str


@dataclass(frozen=True)
class RosterPlan:
    adds: tuple[RosterRow, ...] = ()
    role_changes: tuple[RoleChange, ...] = ()
    drops: tuple[Drop, ...] = ()
    unchanged: int = 0
    errors: tuple[RosterError, ...] = ()
    #: People the roster leaves out who are kept anyway (the person uploading it).
    kept: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def has_changes(self) -> bool:
        return bool(self.adds or self.role_changes or self.drops)

    def digest(self) -> str:
        """Names this exact plan, so a confirmation can check it applies what was previewed."""
        data = {"adds": [asdict(r) for r in self.adds], "changes": [asdict(c) for c in self.role_changes]}
        data["drops"] = [asdict(d) for d in self.drops]
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def roster_parse(text: str) -> tuple[list[RosterRow], list[RosterError]]:
    """Rows and errors (with 1-based line numbers) of a roster CSV."""
    text = text.lstrip("\ufeff")
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        return [], [RosterError(0, "The file is empty.")]
    except csv.Error as error:
        return [], [RosterError(1, f"This is not a readable CSV file ({error}).")]
    names = [name.strip().lower() for name in header]
    missing = [column for column in COLUMNS if column not in names]
    if missing:
        message = f"The header row must name the columns {', '.join(COLUMNS)}; missing: {', '.join(missing)}."
        return [], [RosterError(1, message)]
    index = {column: names.index(column) for column in COLUMNS}
    rows: list[RosterRow] = []
    errors: list[RosterError] = []
    first_line: dict[str, int] = {}
    read = 0  # lines of people so far (blank lines aside), good or bad
    try:
        for record in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in record):
                continue
            if read >= MAX_ROWS:
                errors.append(RosterError(line, f"A roster is limited to {MAX_ROWS} rows."))
                break
            read += 1
            row, problems = _row(line, record, index)
            if row is not None and row.netid in first_line:
                problems.append(f"netid “{row.netid}” is already on line {first_line[row.netid]}.")
            errors.extend(RosterError(line, problem) for problem in problems)
            if row is not None and not problems:
                first_line[row.netid] = line
                rows.append(row)
    except csv.Error as error:
        errors.append(RosterError(reader.line_num, f"This line is not valid CSV ({error})."))
    return rows, errors


def _row(line: int, record: list[str], index: Mapping[str, int]) -> tuple[RosterRow | None, list[str]]:
    cell = lambda column: record[index[column]].strip() if index[column] < len(record) else ""  # noqa: E731
    problems = []
    netid = cell("netid").lower() if cell("netid").isascii() else cell("netid")  # the Kelvin sign lowercases to "k"
    if not netid:
        problems.append("the netid is empty.")
    elif not _POSIX.fullmatch(netid):
        problems.append(f"“{cell('netid')}” is not a valid cluster user name (netid).")
    elif reason := netid_refusal(netid):
        problems.append(reason)
    email = cell("email")
    if email:
        try:
            validate_email(email)
        except ValidationError:
            problems.append(f"“{email}” is not a valid e-mail address.")
    role = ROLE_NAMES.get(cell("role").lower())
    if role is None:
        problems.append(f"unknown role “{cell('role')}”; use student, ta or instructor.")
    first, _, last = cell("name").partition(" ")
    if not netid or not _POSIX.fullmatch(netid) or role is None:
        return None, problems
    return RosterRow(line, netid, email, first.strip(), last.strip(), str(role)), problems


def roster_diff(rows: list[RosterRow], current: Mapping[str, str], *, keep: frozenset[str] = frozenset()) -> RosterPlan:
    """What applying the roster changes. `current`: netid -> role now; `keep`: netids never dropped or demoted."""
    adds, changes, errors = [], [], []
    unchanged = 0
    for row in rows:
        old = current.get(row.netid)
        if old is None:
            adds.append(row)
        elif old == row.role:
            unchanged += 1
        elif row.netid in keep:
            message = f"this would change your own role ({old} to {row.role}); ask another instructor."
            errors.append(RosterError(row.line, message))
        else:
            changes.append(RoleChange(row, old))
    listed = {row.netid for row in rows}
    absent = sorted(netid for netid in current if netid not in listed)
    drops = tuple(Drop(netid, current[netid]) for netid in absent if netid not in keep)
    kept = tuple(netid for netid in absent if netid in keep)
    return RosterPlan(tuple(adds), tuple(changes), drops, unchanged, tuple(errors), kept)


def roster_plan(text: str, current: Mapping[str, str], *, keep: frozenset[str] = frozenset()) -> RosterPlan:
    rows, errors = roster_parse(text)
    if errors:
        return RosterPlan(errors=tuple(errors))
    return roster_diff(rows, current, keep=keep)
