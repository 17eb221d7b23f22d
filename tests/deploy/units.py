"""The systemd units of deploy/systemd/ as a test runs them: their [Service] settings, and their ExecStart
lines with the install paths replaced by this checkout and its virtualenv (systemd itself cannot run in a
test; the command lines are what it would run)."""

import shlex
import socket
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UNITS = REPO / "deploy" / "systemd"
#: Where the units expect the code and its virtualenv (README "Operators: install").
INSTALL = "/opt/labqueue"
INSTALL_VENV_BIN = f"{INSTALL}/.venv/bin"


def unit_sections(name: str) -> dict[str, dict[str, list[str]]]:
    """Each section of a unit file: setting -> its values in order (a setting may repeat, e.g. Environment)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in (UNITS / name).read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"{name}: a setting outside any section: {line}"
        key, sep, value = line.partition("=")
        assert sep, f"{name}: not a setting: {line}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def service(name: str) -> dict[str, list[str]]:
    return unit_sections(name)["Service"]


def _specifiers(token: str, instance: str = "") -> str:
    """systemd's %-specifiers the units use: %% (a literal %), %H (the host name) and %i (a template's instance,
    e.g. the queue of labqueue-worker@submit); any other is refused."""
    out, chars = [], iter(token)
    for char in chars:
        if char != "%":
            out.append(char)
            continue
        spec = next(chars, "")
        if spec == "%":
            out.append("%")
        elif spec == "H":
            out.append(socket.gethostname())
        elif spec == "i" and instance:
            out.append(instance)
        else:
            raise AssertionError(f"a specifier this test does not know: %{spec} in {token}")
    return "".join(out)


def exec_start(name: str, setting: str = "ExecStart", *, instance: str = "", **paths: str) -> list[str]:
    """The unit's ExecStart (or ExecStartPre) as an argv: install paths replaced by this checkout (and `paths`:
    install-time path -> test path), a template's %i by `instance` (labqueue-worker@.service, "submit")."""
    [line] = service(name)[setting]
    replacements = {INSTALL_VENV_BIN: str(Path(sys.executable).parent), **paths, INSTALL: str(REPO)}
    argv = []
    for token in shlex.split(line):
        token = _specifiers(token, instance)
        for old, new in replacements.items():
            token = token.replace(old, new)
        argv.append(token)
    return argv


def environment(name: str) -> dict[str, str]:
    """The unit's own Environment= settings (the EnvironmentFile's values override them, as in systemd)."""
    values = {}
    for line in service(name).get("Environment", []):
        for assignment in shlex.split(line):
            key, _, value = assignment.partition("=")
            values[key] = value
    return values
