"""Pure parsers for sbatch, squeue and sacct output. Tested on captured real output."""

from __future__ import annotations

import logging
import re
import secrets
import string
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime

from . import states
from .records import AcctRecord, LiveJob

logger = logging.getLogger(__name__)

#: Field separator for squeue -o and sacct --delimiter: ASCII "unit separator",
#: which no account, partition, state or node list can hold. The free-text fields
#: (job name, comment) come last, so even a name holding it cannot shift the others.
DELIMITER = "\x1f"

# Framing. Anyone who can submit a job chooses its name (and comment), and Slurm prints them as
# they are, line breaks and delimiters included: a name "x\n<a whole forged line>" adds a line
# that reads like another job's record. So the adapter frames every record with a marker no job
# can know: SLURM_TIME_FORMAT is "%s" plus a random marker made for each command (in the
# command's environment, which other users cannot read), and each record ends with its submit
# time (always set) after the free text. A record is the text up to "<marker>\n"; a job name
# holding line breaks or delimiters stays inside its own record. Output read without a marker
# (recorded output in tests) is read line by line, as Slurm printed it.
#: The time format for a marker (`framing_marker`).
TIME_FORMAT = "%s{marker}"
MARKER_LENGTH = 8
_MARKER_ALPHABET = string.ascii_letters + string.digits

#: squeue -o fields, in order; the job name (free text) last.
SQUEUE_FIELDS = (
    ("job_id", "%i"),
    ("user", "%u"),
    ("account", "%a"),
    ("partition", "%P"),
    ("state", "%T"),
    ("reason", "%r"),
    ("priority", "%Q"),
    ("submit_time", "%V"),
    ("start_time", "%S"),
    ("nodes", "%N"),
    ("reservation", "%v"),
    ("name", "%j"),
)
#: What the adapter asks for: the fields, then the submit time again as the record's end (see "Framing").
SQUEUE_FORMAT = DELIMITER.join(code for _, code in SQUEUE_FIELDS) + DELIMITER + "%V"

#: sacct -o fields, in order; the free-text JobName and Comment last.
SACCT_FIELDS = (
    "JobID",
    "User",
    "Account",
    "Partition",
    "QOS",
    "Reservation",
    "State",
    "ExitCode",
    "Reason",
    "Submit",
    "Start",
    "End",
    "ElapsedRaw",
    "AllocTRES",
    "NodeList",
    "JobName",
    "Comment",
)
SACCT_FORMAT = ",".join(SACCT_FIELDS) + ",Submit"
#: A job id as squeue -r and sacct -X print it: 123, 123_4, 123_[1-3] (a pending array), 123+0 (het).
JOB_ID_RE = re.compile(r"\d+(?:_(?:\d+|\[[\d,%\-]+\]))?(?:\+\d+)?")

_NO_TIME = {"", "N/A", "NONE", "UNKNOWN", "0", "INVALID"}
_EMPTY = {"None", "(null)", "None assigned"}
_MEM_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}


class ParseError(ValueError):
    """Output that does not look like what the command should print."""


def framing_marker() -> str:
    """A fresh marker for one squeue or sacct: about 47 random bits no job can know in advance.

    Short because Slurm cuts formatted times: sacct (22.05) prints at most 19 characters of a time,
    so after the 10 digits of an epoch there is room for 9 ("~" and 8 letters or digits).
    """
    return "~" + "".join(secrets.choice(_MARKER_ALPHABET) for _ in range(MARKER_LENGTH))


def parse_time(value: str) -> datetime | None:
    """An epoch (SLURM_TIME_FORMAT=%s) as an aware UTC datetime; None for no time.

    ISO text (if SLURM_TIME_FORMAT was not honoured) is read as UTC: the runner
    runs squeue/sacct with TZ=UTC.
    """
    value = value.strip()
    if value.upper() in _NO_TIME:
        return None
    if value.isdigit():
        return datetime.fromtimestamp(int(value), tz=UTC)
    try:
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    except ValueError:
        logger.warning("slurm: unreadable time %r", value)
        return None


def parse_int(value: str, default: int = 0) -> int:
    try:
        return int(value.strip())
    except ValueError:
        return default


def clean(value: str) -> str:
    value = value.strip()
    return "" if value in _EMPTY else value


def parse_sbatch(stdout: str) -> str:
    """``sbatch --parsable`` prints ``jobid`` or ``jobid;cluster``."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if not lines:
        raise ParseError("sbatch printed no job id")
    job_id = lines[-1].split(";", 1)[0].strip()
    if not job_id.isdigit():
        raise ParseError(f"sbatch printed {lines[-1]!r}, not a job id")
    return job_id


def parse_job_ids(stdout: str) -> list[str]:
    """One job id per line (squeue -o %i, sacct -o JobID)."""
    return [line.strip() for line in stdout.splitlines() if line.strip()]


def newest_job_id(job_ids: Iterable[str]) -> str | None:
    """The most recently submitted of these ids (job ids only grow)."""
    ids = [job_id for job_id in job_ids if job_id]
    return max(ids, key=job_id_key) if ids else None


def job_id_key(job_id: str) -> tuple[int, int]:
    """Sort key for ``123``, ``123_4`` (array task) and ``123+0`` (het job)."""
    base, _, index = job_id.partition("_")
    return parse_int(base.split("+")[0], -1), parse_int(index, -1)


def _split(line: str, count: int) -> list[str] | None:
    parts = line.split(DELIMITER, count - 1)
    if len(parts) != count or not JOB_ID_RE.fullmatch(parts[0].strip()):
        logger.warning("slurm: skipping unreadable line %r", line)
        return None
    return parts


def _records(stdout: str, count: int, marker: str) -> list[list[str]]:
    """The records of the output, each as `count` fields (the last one free text), bad ones dropped and logged.

    With a marker: records end with DELIMITER, the submit time and "<marker>\n" (see TIME_FORMAT);
    without: one record per line.
    """
    if not marker:
        # Not splitlines(): names may hold \x0b, \x1c, ...
        lines = (line for line in stdout.split("\n") if line.strip())
        return [parts for parts in (_split(line, count) for line in lines) if parts is not None]
    *framed, rest = stdout.split(marker + "\n")
    if rest.strip():
        logger.error(
            "slurm: dropping output not framed by the time marker (is SLURM_TIME_FORMAT honoured?): %r", rest[:500]
        )
    records = []
    for text in framed:
        body, _, end = text.replace(marker, "").rpartition(DELIMITER)
        if not end.strip().isdigit():
            logger.warning("slurm: skipping a record without its end %r", text[:500])
            continue
        if (parts := _split(body, count)) is not None:
            records.append(parts)
    return records


def parse_squeue(stdout: str, *, marker: str = "") -> dict[str, LiveJob]:
    """Parse ``squeue -h -o SQUEUE_FORMAT`` and rank the pending jobs (without a marker: recorded lines of
    the SQUEUE_FIELDS alone)."""
    jobs: dict[str, LiveJob] = {}
    twice: set[str] = set()  # a job id printed twice: one of the lines is not Slurm's
    for parts in _records(stdout, len(SQUEUE_FIELDS), marker):
        raw = dict(zip((name for name, _ in SQUEUE_FIELDS), parts, strict=True))
        job = LiveJob(
            job_id=raw["job_id"].strip(),
            name=raw["name"],
            user=raw["user"].strip(),
            account=raw["account"].strip(),
            partition=raw["partition"].strip(),
            state=raw["state"].strip(),
            reason=clean(raw["reason"]),
            priority=parse_int(raw["priority"]),
            submit_time=parse_time(raw["submit_time"]),
            start_time=parse_time(raw["start_time"]),
            nodes=clean(raw["nodes"]),
            reservation=clean(raw["reservation"]),
        )
        if job.state == states.REVOKED:  # a federated job's copy where it does not run (slurm.states.REVOKED)
            continue
        if job.job_id in jobs or job.job_id in twice:
            logger.warning("slurm: squeue printed job %s more than once; keeping none of them", job.job_id)
            jobs.pop(job.job_id, None)
            twice.add(job.job_id)
            continue
        jobs[job.job_id] = job
    return with_queue_positions(jobs)


def with_queue_positions(jobs: dict[str, LiveJob]) -> dict[str, LiveJob]:
    """Rank PENDING jobs among those they wait behind: the jobs of the same partition and reservation (a job in
    a lab's reservation waits only behind the lab's jobs, and the partition's other jobs not behind it);
    priority desc, then submit time, then id."""
    pending: dict[tuple[str, str], list[LiveJob]] = defaultdict(list)
    for job in jobs.values():
        if job.is_pending:
            pending[job.partition, job.reservation].append(job)
    ranked = {job_id: replace(job, queue_position=None) for job_id, job in jobs.items()}
    oldest = datetime.max.replace(tzinfo=UTC)
    for waiting in pending.values():
        waiting.sort(key=lambda job: (-job.priority, job.submit_time or oldest, job_id_key(job.job_id)))
        for position, job in enumerate(waiting, start=1):
            ranked[job.job_id] = replace(job, queue_position=position)
    return ranked


def parse_tres(value: str) -> dict[str, str]:
    """``billing=1,cpu=1,gres/gpu=1,mem=1000M,node=1`` -> {"billing": "1", ...}."""
    tres: dict[str, str] = {}
    for item in value.strip().split(","):
        key, sep, amount = item.partition("=")
        if sep and key:
            tres[key.strip()] = amount.strip()
    return tres


def tres_gpus(tres: dict[str, str]) -> int:
    """GPU count: the untyped ``gres/gpu`` total, else the sum of typed counts."""
    if "gres/gpu" in tres:
        return parse_int(tres["gres/gpu"])
    return sum(parse_int(v) for k, v in tres.items() if k.startswith("gres/gpu:"))


def parse_mem_mb(value: str) -> int:
    """``1000M``, ``4G``, ``1.50G`` -> megabytes (an int)."""
    match = re.fullmatch(r"\s*([\d.]+)\s*([KMGTP]?)\s*", value or "", re.IGNORECASE)
    if not match:
        return 0
    number, unit = match.groups()
    return round(float(number) * _MEM_UNITS.get(unit.upper() or "M", 1))


def parse_exit_code(value: str) -> tuple[int | None, int | None]:
    """sacct ``ExitCode`` is ``exit:signal``: ``0:9`` -> (0, 9)."""
    exit_code, sep, sig = value.strip().partition(":")
    if not exit_code.strip().isdigit():
        return None, None
    return int(exit_code), (int(sig) if sep and sig.strip().isdigit() else None)


def parse_state(value: str) -> tuple[str, str]:
    """``CANCELLED by 1001`` -> ("CANCELLED", "1001"); ``COMPLETED`` -> ("COMPLETED", "")."""
    words = value.strip().rstrip("+").split()
    if not words:
        return "", ""
    by = words[2] if len(words) >= 3 and words[1] == "by" else ""
    return words[0], by


def _name_and_comment(text: str) -> tuple[str, str] | None:
    """JobName and Comment, both free text, from what follows the fixed fields; None when the comment
    field is missing. The name ends at the first delimiter; the comment takes any extra."""
    name, sep, comment = text.partition(DELIMITER)
    if not sep:
        logger.warning("slurm: skipping a record without a comment field %r", text[:500])
        return None
    return name, comment


def parse_sacct(stdout: str, *, marker: str = "") -> dict[str, AcctRecord]:
    """Parse ``sacct -X -P -n --delimiter=DELIMITER -o SACCT_FORMAT`` (without a marker: recorded lines of
    the SACCT_FIELDS alone)."""
    records: dict[str, AcctRecord] = {}
    for parts in _records(stdout, len(SACCT_FIELDS) - 1, marker):
        free_text = _name_and_comment(parts[-1])
        if free_text is None:
            continue
        raw = dict(zip(SACCT_FIELDS[:-2], parts[:-1], strict=True))
        raw["JobName"], raw["Comment"] = free_text
        state, cancelled_by = parse_state(raw["State"])
        exit_code, sig = parse_exit_code(raw["ExitCode"])
        tres = parse_tres(raw["AllocTRES"])
        record = AcctRecord(
            job_id=raw["JobID"].strip(),
            name=raw["JobName"],
            user=raw["User"].strip(),
            account=raw["Account"].strip(),
            partition=raw["Partition"].strip(),
            qos=raw["QOS"].strip(),
            reservation=clean(raw["Reservation"]),
            state=state,
            cancelled_by=cancelled_by,
            exit_code=exit_code,
            signal=sig,
            reason=clean(raw["Reason"]),
            submit=parse_time(raw["Submit"]),
            start=parse_time(raw["Start"]),
            end=parse_time(raw["End"]),
            elapsed_seconds=parse_int(raw["ElapsedRaw"]),
            alloc_tres=tres,
            gpus=tres_gpus(tres),
            cpus=parse_int(tres.get("cpu", "0")),
            mem_mb=parse_mem_mb(tres.get("mem", "")),
            billing=parse_int(tres.get("billing", "0")),
            comment=raw["Comment"],
            node_list=clean(raw["NodeList"]),
        )
        if record.state != states.REVOKED:  # the origin's copy of a federated job that ran on another cluster
            records[record.job_id] = record
    return records
