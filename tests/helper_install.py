"""Installing this checkout's job-directory helper where the lab's sudoers rule names it: the launcher and its
module, the module byte-compiled as an operator installs it (README). The test set-up (tests/conftest.py) and the
helper's mutation run (scripts/mutate_helper.py) both install through here; it imports nothing of the portal."""

import filecmp
import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
JOBDIR_HELPER = "/usr/local/libexec/labqueue-jobdir"
JOBDIR_MODULE = "/usr/local/libexec/labqueue_jobdir.py"


def jobdir_helper_install() -> str:
    """Put the launcher and this checkout's module where the sudoers rule names them, if what is there differs
    (scripts/labcluster installed it; another checkout's test run on this machine may have installed its own since).
    Each file is replaced at once: a helper starting meanwhile reads the old file or the new one. Under the helper's
    mutation run LABQUEUE_TEST_JOBDIR_HELPER names the mutant of the module to install instead. Returns the
    launcher's path."""
    module = Path(os.environ.get("LABQUEUE_TEST_JOBDIR_HELPER") or REPO / "scripts" / "labqueue_jobdir.py")
    _install_changed(REPO / "scripts" / "labqueue-jobdir", JOBDIR_HELPER, 0o755)
    if _install_changed(module, JOBDIR_MODULE, 0o644) or not os.path.isdir(Path(JOBDIR_MODULE).parent / "__pycache__"):
        # As an operator installs it (README): compiled by the Python the helper runs on.
        subprocess.run(["/usr/bin/python3", "-m", "py_compile", JOBDIR_MODULE], check=True)
    return JOBDIR_HELPER


def _install_changed(source: Path, target: str, mode: int) -> bool:
    if os.path.exists(target) and filecmp.cmp(source, target, shallow=False):
        return False
    fresh = f"{target}.{os.getpid()}"
    shutil.copyfile(source, fresh)
    os.chmod(fresh, mode)
    os.replace(fresh, target)
    return True
