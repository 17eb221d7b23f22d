"""Making a job's working directory on the cluster file system (worker side only)."""

import os
import pwd
import shutil
from pathlib import Path

from django.conf import settings

from courses.scripting import PORTAL_FILE_NAMES, SCRIPT_NAME


class WorkdirError(Exception):
    """The job directory could not be prepared; the message is for the student."""


def job_workdir(*, netid: str, job_uuid: str) -> Path:
    return Path(settings.LABQUEUE_JOB_ROOT) / netid / job_uuid


def staging_dir(job_uuid: str) -> Path:
    """Where the web process keeps a job's uploads until the worker copies them."""
    return Path(settings.MEDIA_ROOT) / "uploads" / job_uuid


def workdir_prepare(*, workdir: str, netid: str, script: str, files: list[tuple[str, Path]]) -> str:
    """Create the directory owned by the student, write the script and copy files in.

    Returns the script's path. Idempotent: a second call rewrites the same content.
    """
    try:
        account = pwd.getpwnam(netid)
    except KeyError:
        raise WorkdirError(
            f"The cluster has no account named '{netid}', so the job cannot run as you. "
            "Ask the course staff or research computing to create your cluster account."
        )
    root = Path(workdir)
    try:
        for directory in (root.parent, root):
            directory.mkdir(mode=0o750, parents=True, exist_ok=True)
            if directory.is_symlink():
                raise WorkdirError("The job directory is a symbolic link; refusing to use it.")
            _own(directory, account)
        for name, source in files:
            if name in PORTAL_FILE_NAMES or "/" in name or name.startswith("."):
                raise WorkdirError(f"The file name '{name}' cannot be used in a job directory; rename the file.")
            with open(source, "rb") as handle:
                _write(root / name, handle.read(), account)
        script_path = root / SCRIPT_NAME
        _write(script_path, script.encode(), account)
    except OSError as error:
        raise WorkdirError(f"The portal could not prepare the job directory ({error.strerror}).")
    return str(script_path)


def staging_clear(job_uuid: str) -> None:
    shutil.rmtree(staging_dir(job_uuid), ignore_errors=True)


def _write(path: Path, data: bytes, account: pwd.struct_passwd) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    fd = os.open(path, flags, 0o640)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    _own(path, account)


def _own(path: Path, account: pwd.struct_passwd) -> None:
    if os.geteuid() == 0:
        os.chown(path, account.pw_uid, account.pw_gid, follow_symlinks=False)
