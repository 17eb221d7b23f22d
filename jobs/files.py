"""Reading a job's directory safely: nothing outside it, no symlinks, bounded reads.

Every path is opened one component at a time relative to the job directory with
O_NOFOLLOW, so neither `..`, an absolute path, nor a symlink the job planted (even one
swapped in after a check) can make the portal read a file outside the job directory.
"""

import os
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from tempfile import SpooledTemporaryFile

MAX_LISTED_FILES = 500


class UnsafePath(Exception):
    """The requested path is not a regular file inside the job directory."""


@dataclass(frozen=True)
class JobFile:
    path: str
    size: int
    modified: float


def _parts(relative: str) -> list[str]:
    if not relative or "\x00" in relative or relative.startswith("/") or "\\" in relative:
        raise UnsafePath(relative)
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UnsafePath(relative)
    return list(parts)


def open_file(root: str, relative: str) -> int:
    """A read-only descriptor for a regular file under root; raises UnsafePath otherwise."""
    parts = _parts(relative)
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(root, flags | os.O_DIRECTORY)
    except OSError as error:
        raise UnsafePath(relative) from error
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        file_fd = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=fd)
    except OSError as error:
        raise UnsafePath(relative) from error
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(file_fd).st_mode):
        os.close(file_fd)
        raise UnsafePath(relative)
    return file_fd


def list_files(root: str) -> list[JobFile]:
    """Regular files under root (symlinks and special files are left out), sorted by path."""
    found: list[JobFile] = []
    for path, info in _walk(root):
        found.append(JobFile(path=path, size=info.st_size, modified=info.st_mtime))
        if len(found) >= MAX_LISTED_FILES:
            break
    return sorted(found, key=lambda f: f.path)


def _walk(root: str, prefix: str = "") -> Iterator[tuple[str, os.stat_result]]:
    try:
        entries = sorted(os.scandir(os.path.join(root, prefix) if prefix else root), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        relative = f"{prefix}/{entry.name}" if prefix else entry.name
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            yield from _walk(root, relative)
        elif stat.S_ISREG(info.st_mode):
            yield relative, info


def tail(root: str, relative: str, limit: int) -> tuple[str, bool]:
    """The last `limit` bytes of a file as text, and whether earlier bytes were left out."""
    try:
        fd = open_file(root, relative)
    except UnsafePath:
        return "", False
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        handle.seek(max(0, size - limit))
        data = handle.read(limit)
    return data.decode("utf-8", errors="replace"), size > limit


def read_page(root: str, relative: str, *, page: int, page_size: int) -> tuple[str, int]:
    """One page of a file from its start (1-based), and the file's size."""
    try:
        fd = open_file(root, relative)
    except UnsafePath:
        return "", 0
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        handle.seek((page - 1) * page_size)
        return handle.read(page_size).decode("utf-8", errors="replace"), size


class TooLarge(Exception):
    pass


def build_zip(root: str, *, folder: str, max_bytes: int) -> SpooledTemporaryFile:
    """Every regular file under root in one zip (in a temporary file), inside `folder/`."""
    files = list(_walk(root))  # all of them: list_files stops at MAX_LISTED_FILES
    if sum(info.st_size for _, info in files) > max_bytes:
        raise TooLarge(f"The job's files add up to more than {max_bytes // (1024 * 1024)} MB.")
    spool = SpooledTemporaryFile(max_size=16 * 1024 * 1024)
    with zipfile.ZipFile(spool, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, _ in files:
            try:
                fd = open_file(root, path)
            except UnsafePath:
                continue
            with os.fdopen(fd, "rb") as source, archive.open(f"{folder}/{path}", "w") as target:
                while chunk := source.read(1024 * 1024):
                    target.write(chunk)
    spool.seek(0)
    return spool
