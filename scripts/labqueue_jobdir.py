"""LabQueue's job-directory helper: the only code that writes into a student's job directory.

The worker runs it AS THE STUDENT through the run-as prefix, and as root for one step only, `provision`:

    sudo -n -u <netid> /usr/local/libexec/labqueue-jobdir submit /usr/bin/sbatch <job root> <netid> <job uuid> \
        [--slurm-conf=<slurm.conf>] <sbatch arguments...> < files
    sudo -n -u <netid> /usr/local/libexec/labqueue-jobdir remove <job root> <netid> <job uuid>
    sudo -n -u root /usr/local/libexec/labqueue-jobdir provision <job root> <netid>

`provision` (root) makes a student's own folder, <job root>/<netid>/ (mode 2750, owned by the student, group
the job root's), once, before the student's first job. Students cannot create anything in the job root
(root:labqueue, mode 2751), so no student can take another's folder name. It creates only in a job root that
root owns, that has the set-group-ID bit and that nobody but root can write, whose group is the caller's
(the service account's), only for an existing account that is not root or a system account (uid >= 1000),
and it refuses (exit 3, saying what the operator must do) when the folder exists but is not that student's
directory. An existing folder of that student is left as it is.

`submit` creates <job root>/<netid>/<job uuid>/ in the student's provisioned folder (mode 2750: the group,
LabQueue's service account, may read; the set-group-ID bit of the job root hands that group and the bit
itself down), writes the regular files
read from stdin into it, then becomes the given sbatch with the given arguments (exec: sbatch's output and
exit status are the helper's). One run-as call per submitted job, not two. The sbatch path comes first so
that the sudoers rule pins it (`... labqueue-jobdir submit /usr/bin/sbatch *`): the service account can make
the helper run that sbatch and nothing else. The files on stdin are the portal's file list: for each file a
line `<size> <name>` and then exactly <size> bytes.

sbatch reads the configuration sudo gives it: sudo resets the environment (no SLURM_CONF of the caller's
reaches it) and sets what the site pins in the root-owned file the sudoers rule names (env_file). The worker
may name another configuration with `--slurm-conf=`, and the helper takes it only when root alone could have
written it: the file and every directory above it owned by root and writable by nobody else (its folder is
where Slurm also looks for gres.conf, plugstack.conf and a CLI filter's script). A configuration the service
account wrote is refused, so it can never make sbatch load a plugin of its own as the student.

Because it runs with the student's own uid, the kernel's permission checks apply to everything it does: a
symlink or FIFO the student planted, or a directory swapped during the run, can only ever reach the
student's own files. Even so it walks with directory handles and opens with O_NOFOLLOW | O_NONBLOCK, so a
planted FIFO or symlink makes it refuse at once instead of blocking or writing elsewhere.

`remove` deletes one job directory, <job root>/<netid>/<job uuid>/, and everything in it (the retention
policy and forgetting a person who left: manage.py purge_job_files and forget_person). It walks the tree
with directory handles opened O_NOFOLLOW, checks each directory it enters is the one it listed, and
unlinks a symlink instead of following it, so a link the student planted inside the job directory never
reaches its target. It refuses anything that is not that directory: another account's tree, a
symlinked <netid> or <job uuid>, a bad name. A directory already gone is not an error. On success it
prints one line, `removed files=<n> directories=<n> bytes=<n>` (or `absent`).

It runs once per submitted job, so it starts light: the system Python in isolated mode without the site
module (-IS; nothing from the portal's environment, virtualenv, settings or any site-packages `.pth` file
reaches it), and only modules built into the interpreter or nearly so (no `re`, no `tarfile`: importing
those cost 13 ms of CPU per start here, more than the rest of the helper). sudo runs `labqueue-jobdir`, a
launcher of a few lines that imports this module from beside itself, where it is installed byte-compiled:
Python compiles a script it runs on every run, but not a module whose compiled file is current (about 5 ms
of CPU per job here).

Exit status 0 on success; 3 with a message on stderr, meant for the student (and the operator), when it
refuses; 2 on a usage error; 127 when sbatch cannot be run; otherwise sbatch's own.
"""

import errno
import grp
import os
import pwd
import stat
import sys

REFUSED = 3
CANNOT_RUN = 127
LETTERS = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
NAME_FIRST = frozenset(LETTERS + LETTERS.upper() + DIGITS + "_")  # one path component, never hidden
NAME_REST = NAME_FIRST | frozenset(".+-")
NETID_FIRST = frozenset(LETTERS + "_")
NETID_REST = frozenset(LETTERS + DIGITS + "_.-")
HEX = frozenset(DIGITS + "abcdef")
UUID_DASHES = (8, 13, 18, 23)
FIRST_UID = 1000  # below: root and system accounts, never given a folder
MAX_FILES = 200
MAX_BYTES = 512 * 1024 * 1024
DIR_MODE = 0o750  # the set-group-ID bit comes from the job root (mkdir inherits it; chmod could not set it)
FILE_MODE = 0o640
#: Directories below a job directory deeper than this are refused by `remove` (one handle open per level).
MAX_REMOVE_DEPTH = 256
DIR_FLAGS = (
    os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
)  # O_PATH: the job root is search-only for students
READ_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Refused(Exception):
    """The helper will not do it; the message is for the student."""


USAGE = (
    "usage: labqueue-jobdir submit <sbatch> <job root> <netid> <job uuid> [--slurm-conf=<file>] [sbatch arguments...]"
    " < files\n"
    "       labqueue-jobdir remove <job root> <netid> <job uuid>\n"
    "       labqueue-jobdir provision <job root> <netid>   (as root)"
)
SLURM_CONF_OPTION = "--slurm-conf="


def main(argv: list[str]) -> int:
    submit = len(argv) >= 6 and argv[1] == "submit"
    provisioning = len(argv) == 4 and argv[1] == "provision"
    if not submit and not provisioning and (len(argv) != 5 or argv[1] != "remove"):
        print(USAGE, file=sys.stderr)
        return 2
    os.umask(0o027)
    env = dict(os.environ)
    arguments = argv[6:]
    try:
        if provisioning:
            print(provision(*argv[2:4]))
            return 0
        if not submit:
            print(remove(*argv[2:5]))
            return 0
        sbatch, job_root, netid, job_uuid = argv[2:6]
        _check_sbatch(sbatch)
        if arguments and arguments[0].startswith(SLURM_CONF_OPTION):
            env["SLURM_CONF"] = _root_only_file(arguments.pop(0).removeprefix(SLURM_CONF_OPTION))
        prepare(job_root, netid, job_uuid, sys.stdin.buffer, _write_files)
    except Refused as refusal:
        print(f"labqueue-jobdir: error: {refusal}", file=sys.stderr)
        return REFUSED
    try:
        os.execve(sbatch, [sbatch, *arguments], env)
    except OSError as error:
        print(f"labqueue-jobdir: error: {sbatch} failed to execute ({error.strerror})", file=sys.stderr)
        return CANNOT_RUN


def _fits(text: str, first: frozenset, rest: frozenset, longest: int) -> bool:
    return 0 < len(text) <= longest and text[0] in first and all(char in rest for char in text[1:])


def _is_uuid(text: str) -> bool:
    return len(text) == 36 and all(
        char == "-" if index in UUID_DASHES else char in HEX for index, char in enumerate(text)
    )


def _check_sbatch(path: str) -> None:
    """The program the helper becomes: an absolute path to a program named sbatch (the sudoers rule names it)."""
    if not path.startswith("/") or os.path.basename(path) != "sbatch" or any(char.isspace() for char in path):
        raise Refused(f"'{path}' is not sbatch; the helper runs sbatch only.")


def _me(netid: str, job_uuid: str, job_root: str, *, doing: str) -> pwd.struct_passwd:
    """The account the helper runs as, after checking the arguments name one of its own jobs."""
    me = pwd.getpwuid(os.getuid())
    if not _fits(netid, NETID_FIRST, NETID_REST, 32) or netid != me.pw_name:
        raise Refused(f"The helper runs as '{me.pw_name}' but was asked to {doing} a job for '{netid}'.")
    if not _is_uuid(job_uuid):
        raise Refused("The job's identifier is not valid.")
    if not os.path.isabs(job_root):
        raise Refused("The job root must be an absolute path.")
    return me


def _root_only_file(path: str) -> str:
    """`path` with symbolic links resolved, when root alone can have written the file and its folder: every
    directory from / down owned by root and writable by nobody else, the file a regular one owned by root and
    writable by nobody else."""
    if not os.path.isabs(path):
        raise Refused(f"The Slurm configuration {path} must be an absolute path.")
    unsafe = f"The Slurm configuration {path} is not a file only root can change; ask research computing."
    fd = os.open("/", DIR_FLAGS)
    try:
        parts = [part for part in os.path.realpath(path).split("/") if part]
        for index, part in enumerate(parts):
            info = os.fstat(fd)
            if info.st_uid != 0 or info.st_mode & 0o022:
                raise Refused(unsafe)
            flags = DIR_FLAGS if index < len(parts) - 1 else os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
            next_fd = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
            raise Refused(unsafe)
    except OSError as error:
        raise Refused(f"The Slurm configuration {path} cannot be opened ({error.strerror}); ask research computing.")
    finally:
        os.close(fd)
    return "/" + "/".join(parts)


def _job_root(job_root: str) -> int:
    """A handle on the job root, refused unless it has the set-group-ID bit (the portal reads through its group)."""
    root_fd = _open_dir_path(job_root)
    if not os.fstat(root_fd).st_mode & stat.S_ISGID:
        os.close(root_fd)
        raise Refused(
            f"The job root {job_root} is not set up for the portal (it lacks the set-group-ID bit, so the "
            "portal could not read your results); ask research computing."
        )
    return root_fd


def _operator_fix(job_root: str, netid: str) -> str:
    return (
        f"research computing must move it out of the way (as root, after checking what is in it: "
        f"`mv {job_root}/{netid} {job_root}/{netid}.old`) and run "
        f"`labqueue-jobdir provision {job_root} {netid}` as root"
    )


def provision(job_root: str, netid: str) -> str:
    """As root: make <job root>/<netid>/ for the student `netid`, owned by them; "exists" when it already is."""
    if os.geteuid() != 0:
        raise Refused("Only root provisions a student's folder in the job root (through sudo -u root).")
    if not _fits(netid, NETID_FIRST, NETID_REST, 32):
        raise Refused(f"'{netid}' is not a valid account name.")
    try:
        student = pwd.getpwnam(netid)
    except KeyError:
        raise Refused(f"The cluster has no account named '{netid}'.")
    if student.pw_uid < FIRST_UID:
        raise Refused(f"'{netid}' is root or a system account; the portal never acts as one.")
    root_fd = _job_root(job_root)
    try:
        info = os.fstat(root_fd)
        caller = os.environ.get("SUDO_UID", "0")  # set by sudo itself; root (an operator) may name any group
        group = pwd.getpwuid(int(caller)).pw_gid if caller.isdigit() and caller != "0" else info.st_gid
        if info.st_uid != 0 or info.st_mode & 0o022 or info.st_gid != group:
            name = grp.getgrgid(group).gr_name
            raise Refused(
                f"The job root {job_root} is not set up for the portal: it must be owned by root and group {name} "
                f"and writable by nobody else (`install -d -o root -g {name} -m 2751 {job_root}`)."
            )
        return _provisioned(root_fd, job_root, netid, student)
    finally:
        os.close(root_fd)


def _provisioned(root_fd: int, job_root: str, netid: str, student: pwd.struct_passwd) -> str:
    """Make <job root>/<netid> (nobody but root can write the job root: no race) and give it to the student."""
    where = f"{job_root}/{netid}"
    try:
        os.mkdir(netid, DIR_MODE, dir_fd=root_fd)
        made = True
    except FileExistsError:
        made = False
    except OSError as error:
        raise Refused(f"{where} cannot be created ({error.strerror}).")
    try:
        fd = os.open(netid, DIR_FLAGS, dir_fd=root_fd)
    except OSError:
        raise Refused(f"{where} exists but is not a directory; {_operator_fix(job_root, netid)}.")
    try:
        if not made:
            if os.fstat(fd).st_uid != student.pw_uid:
                raise Refused(f"{where} belongs to another account; {_operator_fix(job_root, netid)}.")
            return "exists"
        os.chown(f"/proc/self/fd/{fd}", student.pw_uid, -1)  # the inode held, not a path
        os.chmod(f"/proc/self/fd/{fd}", DIR_MODE | stat.S_ISGID)
    finally:
        os.close(fd)
    return "provisioned"


def prepare(job_root: str, netid: str, job_uuid: str, stream, write) -> None:
    me = _me(netid, job_uuid, job_root, doing="prepare")
    root_fd = _job_root(job_root)
    try:
        user_fd = _student_dir(root_fd, job_root, netid, me.pw_uid)
    finally:
        os.close(root_fd)
    try:
        job_fd = _own_dir(user_fd, job_uuid, me.pw_uid, where=f"{job_root}/{netid}/{job_uuid}")
    finally:
        os.close(user_fd)
    try:
        write(job_fd, stream)
    finally:
        os.close(job_fd)


def _open_dir_path(path: str) -> int:
    """A handle on an existing directory, walked one component at a time without following symlinks."""
    fd = os.open("/", DIR_FLAGS)
    try:
        for part in [p for p in path.split("/") if p]:
            if part in (".", ".."):
                raise Refused("The job root must not contain '.' or '..'.")
            next_fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = next_fd
    except OSError as error:
        os.close(fd)
        raise Refused(f"The job root {path} cannot be opened ({error.strerror}); ask research computing.")
    return fd


def _student_dir(root_fd: int, job_root: str, netid: str, uid: int) -> int:
    """The student's provisioned folder <job root>/<netid>: it must exist, be a directory and be theirs."""
    where = f"{job_root}/{netid}"
    try:
        fd = os.open(netid, DIR_FLAGS, dir_fd=root_fd)
    except FileNotFoundError:
        raise Refused(
            f"Your folder {where} has not been made yet; the portal makes it before your first job "
            f"(research computing: run `labqueue-jobdir provision {job_root} {netid}` as root)."
        )
    except OSError:
        raise Refused(f"{where} is not a directory the portal can use; {_operator_fix(job_root, netid)}.")
    if os.fstat(fd).st_uid != uid:
        os.close(fd)
        raise Refused(f"{where} belongs to another account; {_operator_fix(job_root, netid)}.")
    return fd


def _own_dir(parent_fd: int, name: str, uid: int, *, where: str) -> int:
    """Create (if missing) and open a directory that must belong to us and be a real directory."""
    try:
        os.mkdir(name, DIR_MODE, dir_fd=parent_fd)
    except FileExistsError:
        pass
    except OSError as error:
        raise Refused(f"The directory {where} cannot be created ({error.strerror}); ask research computing.")
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except OSError as error:
        if _is_symlink(parent_fd, name):
            raise Refused(f"{where} is a symbolic link; the portal will not follow it. Remove it and try again.")
        raise Refused(f"{where} is not a directory the portal can use ({error.strerror}); remove it and try again.")
    info = os.fstat(fd)
    if info.st_uid != uid:
        os.close(fd)
        raise Refused(f"{where} belongs to another account; ask research computing to remove it.")
    return fd


def _is_symlink(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _write_files(dir_fd: int, stream) -> None:
    """Write the portal's file list: per file a line `<size> <name>`, then exactly <size> bytes."""
    written = total = 0
    while header := stream.readline(512):
        size, _, name = header.rstrip(b"\n").decode("utf-8", "replace").partition(" ")
        if not header.endswith(b"\n") or not (size.isascii() and size.isdigit()):
            raise Refused("The portal sent an unreadable file list.")
        if not _fits(name, NAME_FIRST, NAME_REST, 255):
            raise Refused(f"The file name '{name}' cannot be used in a job directory; rename the file.")
        written += 1
        total += int(size)
        if written > MAX_FILES or total > MAX_BYTES:
            raise Refused("The job has too many files or they are too large.")
        _write_one(dir_fd, name, stream, int(size))


def _write_one(dir_fd: int, name: str, source, size: int) -> None:
    try:
        fd = os.open(name, FILE_FLAGS, FILE_MODE, dir_fd=dir_fd)
    except OSError as error:  # ELOOP: a symlink; ENXIO: a FIFO nobody reads; EISDIR ...
        if _is_symlink(dir_fd, name):
            raise Refused(f"'{name}' in the job directory is a symbolic link; remove it and try again.")
        if error.errno == errno.ENXIO:
            raise Refused(f"'{name}' in the job directory is not a regular file; remove it and try again.")
        raise Refused(
            f"'{name}' in the job directory is not a regular file ({error.strerror}); remove it and try again."
        )
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Refused(f"'{name}' in the job directory is not a regular file; remove it and try again.")
        os.ftruncate(fd, 0)
        os.fchmod(fd, FILE_MODE)
        while size:
            chunk = source.read(min(size, 1024 * 1024))
            if not chunk:
                raise Refused("The portal sent an unreadable file list (it ends inside a file).")
            size -= len(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def remove(job_root: str, netid: str, job_uuid: str) -> str:
    """Delete <job root>/<netid>/<job uuid>/ and everything in it; a summary line for the portal."""
    me = _me(netid, job_uuid, job_root, doing="remove")
    root_fd = _open_dir_path(job_root)
    try:
        user_fd = _existing_own_dir(root_fd, netid, me.pw_uid, where=f"{job_root}/{netid}")
    finally:
        os.close(root_fd)
    if user_fd is None:
        return "absent"
    try:
        job_fd = _existing_own_dir(user_fd, job_uuid, me.pw_uid, where=f"{job_root}/{netid}/{job_uuid}")
        if job_fd is None:
            return "absent"
        try:
            counts = _empty(job_fd, me.pw_uid, where=f"{job_root}/{netid}/{job_uuid}")
        finally:
            os.close(job_fd)
        try:
            os.rmdir(job_uuid, dir_fd=user_fd)
        except OSError as error:
            raise Refused(f"{job_root}/{netid}/{job_uuid} could not be removed ({error.strerror}).")
    finally:
        os.close(user_fd)
    files, directories, size = counts
    return f"removed files={files} directories={directories + 1} bytes={size}"


def _existing_own_dir(parent_fd: int, name: str, uid: int, *, where: str) -> int | None:
    """A handle (O_PATH) on an existing directory of ours, never through a symlink; None when missing."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        return None
    except OSError as error:
        if _is_symlink(parent_fd, name):
            raise Refused(f"{where} is a symbolic link; the portal will not follow it.")
        raise Refused(f"{where} is not a directory the portal can remove ({error.strerror}).")
    if os.fstat(fd).st_uid != uid:
        os.close(fd)
        raise Refused(f"{where} belongs to another account; ask research computing to remove it.")
    return fd


def _open_listable(parent_fd: int, name: str, uid: int, expected: os.stat_result | None, *, where: str) -> int:
    """A readable handle on the directory `name` of ours (made readable and writable for us first when the job
    took those rights away), checked to be the very directory listed (`expected`), never a symlink."""
    try:
        path_fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except OSError as error:
        raise Refused(f"{where} changed while it was being removed ({error.strerror}); run the removal again.")
    try:
        info = os.fstat(path_fd)
        if expected is not None and (info.st_dev, info.st_ino) != (expected.st_dev, expected.st_ino):
            raise Refused(f"{where} changed while it was being removed; run the removal again.")
        if info.st_uid != uid:
            raise Refused(f"{where} belongs to another account; ask research computing to remove it.")
        if info.st_mode & 0o700 != 0o700:
            os.chmod(f"/proc/self/fd/{path_fd}", stat.S_IMODE(info.st_mode) | 0o700)  # the inode held, not a path
        try:
            fd = os.open(name, READ_DIR_FLAGS, dir_fd=parent_fd)
        except OSError as error:
            raise Refused(f"{where} cannot be opened ({error.strerror}); run the removal again.")
        again = os.fstat(fd)
        if (again.st_dev, again.st_ino) != (info.st_dev, info.st_ino):
            os.close(fd)
            raise Refused(f"{where} changed while it was being removed; run the removal again.")
        return fd
    finally:
        os.close(path_fd)


def _names(fd: int, where: str) -> list[str]:
    try:
        return sorted(os.listdir(fd))
    except OSError as error:
        os.close(fd)
        raise Refused(f"{where} cannot be listed ({error.strerror}).")


def _empty(job_fd: int, uid: int, *, where: str) -> tuple[int, int, int]:
    """Remove everything inside the directory at job_fd, depth first, without recursion: (files, directories,
    bytes) removed. Symlinks, FIFOs and other special files are unlinked, never opened or followed."""
    files = directories = size = 0
    top = _open_listable(job_fd, ".", uid, None, where=where)
    # Each level: its handle, its path for messages, and the names in it still to look at.
    stack: list[tuple[int, str, list[str]]] = [(top, where, _names(top, where))]
    try:
        while stack:
            fd, path, names = stack[-1]
            if not names:
                os.close(stack.pop()[0])
                if stack:
                    parent_fd, _, _ = stack[-1]
                    try:
                        os.rmdir(os.path.basename(path), dir_fd=parent_fd)
                    except OSError as error:
                        raise Refused(f"{path} could not be removed ({error.strerror}).")
                    directories += 1
                continue
            name = names.pop()
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if len(stack) > MAX_REMOVE_DEPTH:
                    raise Refused(f"{path} is nested more than {MAX_REMOVE_DEPTH} levels deep; remove it by hand.")
                child = _open_listable(fd, name, uid, info, where=f"{path}/{name}")
                stack.append((child, f"{path}/{name}", _names(child, f"{path}/{name}")))
                continue
            try:
                os.unlink(name, dir_fd=fd)
            except FileNotFoundError:
                continue
            except OSError as error:
                raise Refused(f"{path}/{name} could not be removed ({error.strerror}).")
            files += 1
            size += info.st_size if stat.S_ISREG(info.st_mode) else 0
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    return files, directories, size
