"""Uploads kept across a refused form, so bad input elsewhere in the form loses no file.

When a submission is refused (a parameter out of range, a limit), the files the student
chose are kept under MEDIA_ROOT/pending/<token>/ and the form carries the token; only the
session that kept them may use it. Once that session has ended nobody can, and the purge
(jobs.retention.kept_uploads_purge) removes them.
"""

import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.files.uploadedfile import UploadedFile

SESSION_KEY = "labqueue_upload_tokens"
#: How many refused forms' files a session keeps (its latest)
KEPT_FORMS = 10
T = TypeVar("T")


def kept_root() -> Path:
    """Where the uploads of refused forms are kept, one folder per token."""
    return Path(settings.MEDIA_ROOT) / "pending"


def _folder(token: str) -> Path:
    return kept_root() / token


def uploads_keep(*, session, uploads: list[UploadedFile], token: str = "") -> str:
    """Save the uploads next to any kept under `token`; returns the token to carry in the form.

    A folder that already holds more than one submission may send keeps nothing more (the form says the files are
    over the limit), and the folders of tokens the session no longer holds (it holds its last KEPT_FORMS) go at
    once rather than when the session ends: a student sending a refused form again and again fills no disk."""
    held = session.get(SESSION_KEY, [])
    if token not in held:
        token = secrets.token_urlsafe(16)
    folder = _folder(token)
    folder.mkdir(parents=True, exist_ok=True)
    if _size(folder) <= settings.LABQUEUE_UPLOAD_MAX_BYTES:
        for upload in uploads:
            with open(folder / upload.name, "wb") as target:
                for chunk in upload.chunks():
                    target.write(chunk)
    held = [*(kept for kept in held if kept != token), token]
    for dropped in held[:-KEPT_FORMS]:
        shutil.rmtree(_folder(dropped), ignore_errors=True)
    session[SESSION_KEY] = held[-KEPT_FORMS:]
    return token


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file())


def uploads_kept(*, session, token: str) -> list[Path]:
    """The files kept under `token`, if this session kept them."""
    if not token or token not in session.get(SESSION_KEY, []) or not _folder(token).is_dir():
        return []
    return [path for path in sorted(_folder(token).iterdir()) if path.is_file()]


@contextmanager
def uploads_merged(*, kept: list[Path], new: list[UploadedFile]) -> Iterator[list[File]]:
    """Kept files and new uploads as one list of open files (a new file replaces a kept one of its name)."""
    names = {upload.name for upload in new}
    opened = [File(path.open("rb"), name=path.name) for path in kept if path.name not in names]
    try:
        yield opened + list(new)
    finally:
        for handle in opened:
            handle.close()


def uploads_send(*, session, form, token: str, kept: list[Path], too_large: str, send: Callable[[list[File]], T]):
    """Send a job request with its files, or keep them for the next try: submitting and resubmitting.

    `form` has been bound; `kept` are files chosen before (on a refused try, or an attempt's own); `send`
    gets every file (a new one replacing a kept one of its name) and makes the job, or raises
    ValidationError. Returns the job and the token; when it is refused (the reason is on the form, or
    `too_large` when all the files together are over the size limit) the job is None and the files just
    chosen are kept under the returned token, so nothing chosen is lost.
    """
    valid = form.is_valid()
    new = form.cleaned_data.get("uploads") or []
    with uploads_merged(kept=kept, new=new) as uploads:
        if valid and sum(upload.size for upload in uploads) > settings.LABQUEUE_UPLOAD_MAX_BYTES:
            form.add_error("uploads", too_large)
        elif valid:
            try:
                job = send(uploads)
            except ValidationError as error:
                form.add_error(None, error)
            else:
                uploads_forget(session=session, token=token)
                return job, token
    if new or token:
        token = uploads_keep(session=session, uploads=new, token=token)
    return None, token


def uploads_forget(*, session, token: str) -> None:
    if token in session.get(SESSION_KEY, []):
        shutil.rmtree(_folder(token), ignore_errors=True)
        session[SESSION_KEY] = [kept for kept in session[SESSION_KEY] if kept != token]


def uploads_discard(*, token: str) -> None:
    """Delete the files kept under `token`, whoever kept them (forgetting the person whose session it was)."""
    if token and "/" not in token and token not in (".", ".."):
        shutil.rmtree(_folder(token), ignore_errors=True)
