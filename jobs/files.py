"""Reading a job's directory safely: nothing outside it, no symlinks, bounded reads and walks.

Every path is opened one component at a time relative to a directory descriptor with
O_NOFOLLOW (and O_NONBLOCK, so a FIFO never blocks), and the result is fstat-checked, so
neither `..`, an absolute path, nor a symlink the job planted (even one swapped in after a
check) can make the portal read a file outside the job directory.

A file is listed and served only when it belongs to the job's user (the owner of the job
directory, which the portal gives to the student) and has a single link: where
fs.protected_hardlinks is off, a job could otherwise hard-link a file the web server may read
(another student's result, a portal secret) into its directory and download it.

The walk is iterative over directory descriptors (os.scandir on a descriptor): it follows no
symlinked directory, keeps at most MAX_DEPTH + 1 descriptors open, and looks at no more than
MAX_SCANNED_ENTRIES entries, however the job shaped its directory.
"""

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from zipfile import ZIP_DEFLATED

from zipstream import ZipStream

from courses.scripting import SESSION_FILE_NAME

MAX_LISTED_FILES = 500
#: Directories deeper than this below the job directory are not walked into.
MAX_DEPTH = 32
#: Directory entries looked at by one walk (listing or zip), files and directories alike.
MAX_SCANNED_ENTRIES = 20_000

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class UnsafePath(Exception):
    """The requested path is not a regular file of the job's user inside the job directory."""


@dataclass(frozen=True)
class JobFile:
    path: str
    size: int

    @property
    def linkable(self) -> bool:
        """Whether the file is offered: linked, viewed, downloaded and zipped (name_problem says why not)."""
        return name_problem(self.path) is None

    @property
    def shown_path(self) -> str:
        """The name with line breaks, other control characters and bytes that are not UTF-8 made visible
        (\\n, \\x1b, \\udcff, ...)."""
        return "".join(repr(ch)[1:-1] if _is_control(ch) or _is_undecodable(ch) else ch for ch in self.path)

    @property
    def problem(self) -> str | None:
        """Why the file is not offered, in words for its page; None when it is."""
        return name_problem(self.path)


def name_problem(path: str) -> str | None:
    """Why a file at `path` (relative to the job directory) is not offered, or None when it is. The one rule for
    the job page's list, the viewer, single downloads and the zip, so what the page cannot link is neither
    viewed, downloaded nor zipped: a line break or escape sequence in a zip entry's name reaches the terminal
    of whoever lists the archive, and a backslash is a folder separator to Windows' unzip (``..\\..\\x``)."""
    if _has_control(path):
        return "its name holds a line break or another control character"
    if "\\" in path:
        return "its name holds a backslash, which Windows reads as a folder separator"
    if any(_is_undecodable(ch) for ch in path):
        return "its name is not valid UTF-8 text"
    if path == SESSION_FILE_NAME:
        return "it holds the notebook session's address and key, which only the portal reads"
    return None


def _unsafe_name(path: str) -> str | None:
    """Why no file of this name may be opened at all, even by the portal for itself."""
    if _has_control(path) or "\\" in path or any(_is_undecodable(ch) for ch in path):
        return "its name cannot be read safely"
    return None


def _is_control(ch: str) -> bool:
    return ord(ch) < 32 or 127 <= ord(ch) < 160


def _has_control(text: str) -> bool:
    return any(_is_control(ch) for ch in text)


def _is_undecodable(ch: str) -> bool:
    """A byte of the name that is not UTF-8, as os.fsdecode keeps it (a lone surrogate, U+DC80 to U+DCFF)."""
    return "\udc80" <= ch <= "\udcff"


def _parts(relative: str, *, offered: bool = True) -> list[str]:
    problem = name_problem(relative) if offered else _unsafe_name(relative)
    if not relative or relative.startswith("/") or problem is not None:
        raise UnsafePath(relative)
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UnsafePath(relative)
    return list(parts)


def _servable(info: os.stat_result, owner: int) -> bool:
    """A regular file of the job's user with no other name anywhere (no hard link)."""
    return stat.S_ISREG(info.st_mode) and info.st_uid == owner and info.st_nlink == 1


def _open_root(root: str) -> int:
    return os.open(root, _FLAGS | os.O_DIRECTORY)


def unreadable(root: str) -> bool:
    """The job directory exists but this process may not open it (a student who closed it to the portal's
    group, a job root without the set-group-ID bit, an NFS export squashing the portal's account)."""
    try:
        os.close(_open_root(root))
    except PermissionError:
        return True
    except OSError:
        return False  # missing (not made yet) or not a directory: nothing to read, nothing to explain
    return False


def open_file(root: str, relative: str, *, offered: bool = True) -> int:
    """A read-only descriptor for a servable file under root; raises UnsafePath otherwise. `offered=False`: a
    file the portal reads for itself and never serves (the session file), opened with the same care."""
    parts = _parts(relative, offered=offered)
    try:
        fd = _open_root(root)
    except OSError as error:
        raise UnsafePath(relative) from error
    try:
        owner = os.fstat(fd).st_uid
        for part in parts[:-1]:
            next_fd = os.open(part, _FLAGS | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        file_fd = os.open(parts[-1], _FLAGS, dir_fd=fd)
    except OSError as error:
        raise UnsafePath(relative) from error
    finally:
        os.close(fd)
    if not _servable(os.fstat(file_fd), owner):
        os.close(file_fd)
        raise UnsafePath(relative)
    return file_fd


def list_files(root: str) -> list[JobFile]:
    """Servable files under root (symlinks, special files, others' files left out), sorted by path."""
    found = [JobFile(path=path, size=info.st_size) for path, info in islice(_walk(root), MAX_LISTED_FILES)]
    return sorted(found, key=lambda f: f.path)


def _walk(root: str) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, stat) of each servable file, depth first, without recursion or symlinks."""
    try:
        root_fd = _open_root(root)
    except OSError:
        return
    owner = os.fstat(root_fd).st_uid
    budget = MAX_SCANNED_ENTRIES
    # Each level: its descriptor, its path prefix, and the entries not yet visited.
    stack: list[tuple[int, str, Iterator[tuple[str, os.stat_result]]]] = []
    try:
        budget = _push(stack, root_fd, "", budget)
        while stack:
            fd, prefix, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                os.close(stack.pop()[0])
                continue
            name, info = entry
            relative = f"{prefix}{name}"
            if stat.S_ISDIR(info.st_mode):
                if len(stack) > MAX_DEPTH or budget <= 0:
                    continue
                try:
                    child = os.open(name, _FLAGS | os.O_DIRECTORY, dir_fd=fd)
                except OSError:
                    continue
                if (os.fstat(child).st_dev, os.fstat(child).st_ino) != (info.st_dev, info.st_ino):
                    os.close(child)  # swapped after the scan: not the directory we looked at
                    continue
                budget = _push(stack, child, f"{relative}/", budget)
            elif _servable(info, owner):
                yield relative, info
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def _push(stack: list, fd: int, prefix: str, budget: int) -> int:
    """Read at most `budget` entries of the directory at fd (sorted by name) onto the stack."""
    entries = []
    try:
        with os.scandir(fd) as scan:
            for entry in islice(scan, max(budget, 0)):
                try:
                    entries.append((entry.name, entry.stat(follow_symlinks=False)))
                except OSError:
                    continue
    except OSError:
        pass
    entries.sort(key=lambda item: item[0])
    stack.append((fd, prefix, iter(entries)))
    return budget - len(entries)


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


def read_head(root: str, relative: str, limit: int, *, offered: bool = True) -> tuple[bytes, int]:
    """The first `limit` bytes of a servable file under root and the file's size; raises UnsafePath otherwise."""
    with os.fdopen(open_file(root, relative, offered=offered), "rb") as handle:
        return handle.read(limit), os.fstat(handle.fileno()).st_size


def read_page(root: str, relative: str, *, page: int, page_size: int) -> tuple[str, int, int]:
    """One page of a file from its start (1-based; past the end: the last page), the file's
    size, and the number of the page read."""
    try:
        fd = open_file(root, relative)
    except UnsafePath:
        return "", 0, 1
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        page = max(1, min(page, -(-size // page_size)))
        handle.seek((page - 1) * page_size)
        return handle.read(page_size).decode("utf-8", errors="replace"), size, page


class TooLarge(Exception):
    pass


#: How much of a file is read (and handed to the compressor) at a time while a zip streams.
ZIP_CHUNK_BYTES = 256 * 1024


def zip_stream(root: str, *, folder: str, max_bytes: int) -> Iterator[bytes]:
    """Every offered file under root (name_problem) as one zip inside `folder/`, made while it is sent: the
    walk and the size check happen now, so a job over `max_bytes` raises TooLarge before the first byte; the
    returned chunks open, read and compress one file at a time, so memory stays flat however large the zip."""
    found = offered_files(root)
    if sum(size for _, size in found) > max_bytes:
        raise TooLarge(f"The job's files add up to more than {max_bytes // (1024 * 1024)} MB.")
    return zip_folders_stream([(root, folder, found)])


def offered_files(root: str) -> list[tuple[str, int]]:
    """(relative path, size) of every file under root that a zip holds: servable (_walk) and offered
    (name_problem). The walk is bounded (MAX_SCANNED_ENTRIES), however the job shaped its directory."""
    return [(path, info.st_size) for path, info in _walk(root) if name_problem(path) is None]


def zip_folders_stream(
    folders: list[tuple[str, str, list[tuple[str, int]]]], *, notes: tuple[tuple[str, bytes], ...] = ()
) -> Iterator[bytes]:
    """One zip, made while it is sent, of several job directories: per (root, folder, files found by
    offered_files) the files under `folder/`, then each (name, text) of `notes` at the top. Files are read
    one at a time, never past the size their walk found; one gone or swapped for a link since is left out."""
    archive = ZipStream(compress_type=ZIP_DEFLATED)
    for root, folder, found in folders:
        for path, size in found:
            try:
                fd = open_file(root, path)
            except UnsafePath:
                continue  # gone, or swapped for a link, since the walk
            with os.fdopen(fd, "rb") as source:
                archive.add(_read_up_to(source, size), f"{folder}/{path}", size=size)
                yield from archive.all_files()
    for name, data in notes:
        archive.add(data, name)
        yield from archive.all_files()
    yield from archive.footer()


def _read_up_to(source, size: int) -> Iterator[bytes]:
    """The file's bytes, never more than the size its walk found, which is what was checked against the cap,
    however the job grows the file meanwhile."""
    remaining = size
    while remaining and (chunk := source.read(min(remaining, ZIP_CHUNK_BYTES))):
        remaining -= len(chunk)
        yield chunk
