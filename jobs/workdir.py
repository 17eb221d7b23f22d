"""Making a job's working directory on the cluster file system (worker side only; the uploads the web
side keeps for a job until then are jobs.staging).

The worker never writes into a student's directory itself. It lists the script and the job's files and
hands them to the job-directory helper (scripts/labqueue-jobdir, installed at LABQUEUE_JOBDIR_HELPER),
which runs AS THE STUDENT through the run-as prefix (`sudo -n -u {user}`), so whatever the student does to
their own directory meanwhile can only ever reach their own files. The helper then runs sbatch itself:
one run-as call per submitted job. Before a student's first job the worker has the helper, run as root
through the sudoers rule, make the student's own folder in the job root (`provision`): students cannot
write the job root, so nobody can take another student's folder name.
"""

import hashlib
import logging
import os
import pwd
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

import slurm
from courses.scripting import PORTAL_FILE_NAMES, SCRIPT_NAME
from slurm import runner

#: Exit status of the helper when it refuses (its message is for the student).
HELPER_REFUSED = 3

log = logging.getLogger(__name__)


class WorkdirError(Exception):
    """The job directory could not be prepared, for a reason a retry cannot change; the message is for
    the student."""


class WorkdirUnavailable(Exception):
    """The portal's side failed (the helper timed out or could not be run): a retry may help, and an
    operator may have to look. The message is for the student and the operator."""


def job_workdir(*, netid: str, job_uuid: str) -> Path:
    return Path(settings.LABQUEUE_JOB_ROOT) / netid / job_uuid


def workdir_submit(
    spec: slurm.JobSpec,
    *,
    script: str,
    files: list[tuple[str, Path]],
    digests: dict[Path, str] | None = None,
    script_name: str = SCRIPT_NAME,
) -> str:
    """Create the job directory as the student, write the script and copy the files in, then submit it:
    one run-as call, the helper's `submit`, which ends by running sbatch. Returns the Slurm job id.
    `digests` are the SHA-256 some sources must have (a starter file: what its assignment version recorded).
    `script_name` is the script's file name (a check, jobs.checks, writes its own beside the job's).

    Raises WorkdirError (the job cannot run as this account: the message is for the student),
    WorkdirUnavailable (the helper could not be run at all, or the call ran out of time), and what
    slurm.submit raises otherwise: SlurmRejected with the helper's refusal or sbatch's, SlurmUnavailable.
    Idempotent up to sbatch: a second call rewrites the same content.
    """
    netid = spec.run_as
    _account_check(netid)
    root = Path(spec.workdir)  # <job root>/<netid>/<job uuid>, made by the portal when the job was submitted
    student_folder_provision(job_root=root.parent.parent, netid=netid)
    with tempfile.TemporaryFile() as listing:
        _pack(listing, script=script, files=files, digests=digests or {}, script_name=script_name)
        listing.seek(0)
        timeout = settings.LABQUEUE_JOBDIR_TIMEOUT
        try:
            return slurm.submit(spec, through=_helper_submit(root), stdin=listing, timeout=timeout)
        except slurm.SlurmMisconfigured as error:  # sudo or the helper could not run: nothing was done
            raise WorkdirUnavailable(f"the job directory could not be prepared: {error}") from error
        except slurm.SlurmTimeout as error:
            # sbatch reports a controller that does not answer itself, well within this limit; a call that ran
            # out of it was stuck on the worker (a file system that hangs). Counted as the portal's failure; if
            # sbatch did send the job, the next attempt finds it by name.
            raise WorkdirUnavailable(
                f"the job directory could not be prepared: the helper and sbatch did not finish within {timeout:g} s"
            ) from error


def workdir_probe(*, workdir: str, netid: str, script: str) -> None:
    """What workdir_submit does, with sbatch asked only for its version (manage.py doctor): the helper makes
    the job directory as the student and writes the script, and the sudoers rule lets it run sbatch.

    Raises WorkdirError (the helper or sbatch refused) or WorkdirUnavailable (they could not be run)."""
    _account_check(netid)
    root = Path(workdir)
    student_folder_provision(job_root=root.parent.parent, netid=netid)
    with tempfile.TemporaryFile() as listing:
        _pack(listing, script=script, files=[], digests={})
        listing.seek(0)
        try:
            argv = [*_helper_submit(root), "--version"]
            runner.run(argv, run_as=netid, stdin=listing, timeout=settings.LABQUEUE_JOBDIR_TIMEOUT)
        except slurm.SlurmRejected as refusal:
            raise WorkdirError(str(refusal)) from refusal
        except slurm.SlurmUnavailable as error:
            raise WorkdirUnavailable(f"the job directory could not be prepared: {error}") from error


def _helper_submit(workdir: Path) -> list[str]:
    """The helper's `submit` command line for <job root>/<netid>/<job uuid>, up to sbatch's arguments."""
    job_root, netid = workdir.parent.parent, workdir.parent.name
    argv = [settings.LABQUEUE_JOBDIR_HELPER, "submit", slurm.sbatch_path(), str(job_root), netid, workdir.name]
    if os.environ.get("SLURM_CONF"):  # sudo passes no SLURM_CONF on; the helper takes one only if root wrote it
        argv.append(f"--slurm-conf={os.environ['SLURM_CONF']}")
    return argv


def student_folder_provision(*, job_root: Path, netid: str) -> None:
    """Make sure <job root>/<netid> is the student's own folder: when it is missing, the helper's `provision`
    (as root, through sudo) makes it. A folder there that is not the student's directory (made before the job
    root was closed to students, or by hand) is refused with what an operator must do, also in the log.

    Raises WorkdirError (the folder cannot be used) or WorkdirUnavailable (the helper could not be run)."""
    folder = job_root / netid
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise WorkdirUnavailable(f"the job root {job_root} cannot be read by the portal ({error.strerror})")
    if info is None:
        helper = [settings.LABQUEUE_JOBDIR_HELPER, "provision", str(job_root), netid]
        try:
            runner.run(helper, run_as="root", timeout=settings.LABQUEUE_JOBDIR_TIMEOUT)
        except slurm.SlurmRejected as refusal:
            log.error("The folder %s could not be provisioned: %s", folder, refusal)
            raise WorkdirError(str(refusal)) from refusal
        except slurm.SlurmUnavailable as error:
            raise WorkdirUnavailable(f"the folder {folder} could not be provisioned: {error}") from error
        return
    if stat.S_ISDIR(info.st_mode) and info.st_uid == pwd.getpwnam(netid).pw_uid:
        return
    log.error(
        "The folder %s belongs to uid %s, not to %s (or is not a directory): the portal will not send %s's jobs "
        "until an operator moves it out of the way (as root: mv %s %s.old) and runs, as root, "
        "labqueue-jobdir provision %s %s",
        folder,
        info.st_uid,
        netid,
        netid,
        folder,
        folder,
        job_root,
        netid,
    )
    raise WorkdirError(
        f"Your job folder {folder} on the cluster is not yours (another account made it or it is not a folder), "
        "so the portal will not put your jobs there and did not send this one. You cannot fix this yourself and "
        "it is not your fault: research computing must move that folder out of the way (as root, after checking "
        f"what is in it: `mv {folder} {folder}.old`) and run `labqueue-jobdir provision {job_root} {netid}` as "
        "root. Submit again after that."
    )


def _account_check(netid: str) -> None:
    try:
        pwd.getpwnam(netid)
    except KeyError:
        raise WorkdirError(
            f"The cluster has no account named '{netid}', so the job cannot run as you. "
            "Ask the course staff or research computing to create your cluster account."
        )


def _pack(
    listing, *, script: str, files: list[tuple[str, Path]], digests: dict[Path, str], script_name: str = SCRIPT_NAME
) -> None:
    """The file list the helper reads: per file a line `<size> <name>` and its bytes; the script last.
    Sources are the portal's own files (starter files and staged uploads), read without following symlinks;
    a source with an entry in `digests` is refused unless its bytes have that SHA-256."""
    for name, source in files:
        if name in PORTAL_FILE_NAMES or "/" in name or name.startswith(".") or not name.isprintable():
            raise WorkdirError(f"The file name '{name}' cannot be used in a job directory; rename the file.")
        data = _read_regular(source)
        if source in digests and hashlib.sha256(data).hexdigest() != digests[source]:
            raise WorkdirError(
                f"The starter file '{name}' is no longer the one this job's version of the assignment was saved "
                "with, so the job was not sent. Tell the course staff: the instructor must upload it again."
            )
        _add(listing, name, data)
    _add(listing, script_name, script.encode())


def _read_regular(source: Path) -> bytes:
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise WorkdirError(f"The file '{source.name}' could not be read ({error.strerror}); upload it again.")
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise WorkdirError(f"'{source.name}' is not a regular file; upload it again.")
        return handle.read()


def _add(listing, name: str, data: bytes) -> None:
    listing.write(f"{len(data)} {name}\n".encode())
    listing.write(data)


_REMOVED = re.compile(r"removed files=(\d+) directories=(\d+) bytes=(\d+)")


@dataclass(frozen=True)
class Removed:
    """What the helper removed from a job directory (nothing when it was already gone)."""

    files: int = 0
    directories: int = 0
    bytes: int = 0


def workdir_remove(*, workdir: str, netid: str) -> Removed:
    """Delete a job directory (<job root>/<netid>/<job uuid>) and everything in it, as the student, through
    the job-directory helper: the service account owns nothing in the job root and may remove nothing there.
    The helper never follows a symlink the student planted and refuses any other directory.

    Raises WorkdirError when the helper refuses (its message says why) and WorkdirUnavailable when it could
    not be run (sudo refused, an unknown account, a timeout)."""
    root = Path(workdir)
    if root.parent.name != netid:
        raise WorkdirError(f"{workdir} is not a job directory of '{netid}'; the portal removes only those.")
    helper = [settings.LABQUEUE_JOBDIR_HELPER, "remove", str(root.parent.parent), netid, root.name]
    try:
        answer = runner.run(helper, run_as=netid, timeout=settings.LABQUEUE_JOBDIR_TIMEOUT)
    except ValueError as error:  # not a name the run-as prefix accepts
        raise WorkdirError(str(error)) from error
    except slurm.SlurmRejected as refusal:
        raise WorkdirError(str(refusal)) from refusal
    except slurm.SlurmUnavailable as error:
        raise WorkdirUnavailable(f"the job directory could not be removed: {error}") from error
    found = _REMOVED.search(answer)
    if found is None:
        return Removed()  # "absent": nothing was there (never made, or removed before)
    return Removed(*(int(number) for number in found.groups()))
