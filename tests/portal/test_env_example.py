""".env.example works as shipped with Docker's --env-file, systemd's EnvironmentFile= and environs' read_env.

The two small parsers below follow each tool's documented rules:
- Docker (`docker run --env-file`): leading whitespace of a line is dropped; blank lines and lines starting
  with "#" are skipped; the line is split at the first "="; the name may not contain whitespace; the value is
  the rest of the line exactly (no quote removal, no inline comments, no escapes).
- systemd (systemd.exec EnvironmentFile=, parsed as systemd's env-file parser does): blank lines and lines
  starting with "#" or ";" are skipped; whitespace around "=" and at both ends of an unquoted value is
  dropped; a value may be single- or double-quoted (the quotes removed); outside quotes a backslash escapes
  the next character (and a backslash at the end of a line joins the next line).
Where the three disagree, an operator's settings would depend on how they are loaded: the file must not hold
such a value.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / ".env.example"
A_REAL_KEY = "k3Yx9-not-a-placeholder-Lq7vR2mZ8wT4nB6cJ1hF5sD0gA3eU9yP"


def docker_env_file(text: str) -> dict[str, str]:
    values = {}
    for line in text.splitlines():
        line = line.lstrip()
        if not line or line.startswith("#"):
            continue
        name, has_value, value = line.partition("=")
        assert not re.search(r"\s", name), f"Docker refuses a variable name with whitespace: {name!r}"
        assert has_value, f"{name} has no '=': Docker would copy it from the host's environment"
        values[name] = value
    return values


def systemd_environment_file(text: str) -> dict[str, str]:
    values = {}
    lines = iter(text.splitlines())
    for line in lines:
        while line.endswith("\\") and not line.lstrip().startswith(("#", ";")):
            line = line[:-1] + next(lines, "")
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        name, _, raw = stripped.partition("=")
        values[name.strip()] = _systemd_value(raw.strip())
    return values


def _systemd_value(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return re.sub(r'\\(["\\`$])', r"\1", raw[1:-1])
    return re.sub(r"\\(.)", r"\1", raw)


def environs_read_env(path: Path, names: list[str]) -> dict[str, str | None]:
    """What an environs Env that read the file with read_env (python-dotenv) gives for each name, in a process
    whose environment has none of them."""
    program = (
        "import json, sys\n"
        "from environs import Env\n"
        "env = Env()\n"
        "assert env.read_env(sys.argv[1], recurse=False)\n"
        "print(json.dumps({name: env.str(name, None) for name in sys.argv[2:]}))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", program, str(path), *names],
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(run.stdout)


def settings_variables() -> set[str]:
    """Every variable portal/settings.py reads through its env helpers."""
    source = (REPO / "portal" / "settings.py").read_text()
    return set(re.findall(r"\benv(?:_bool|_int|_list|_json)?\(\s*\"([A-Z][A-Z0-9_]*)\"", source))


def test_docker_systemd_and_environs_read_the_same_values_from_the_example():
    text = EXAMPLE.read_text()

    docker = docker_env_file(text)

    assert len(docker) > 60
    assert systemd_environment_file(text) == docker
    assert environs_read_env(EXAMPLE, list(docker)) == docker


def test_json_settings_in_the_example_are_valid_json_as_docker_passes_them():
    docker = docker_env_file(EXAMPLE.read_text())

    assert isinstance(json.loads(docker["LABQUEUE_SAML_IDPS"]), list)
    assert isinstance(json.loads(docker["LABQUEUE_OIDC_PROVIDERS"]), list)
    assert isinstance(json.loads(docker["LABQUEUE_GROUP_ROLES"]), dict)


def test_no_value_in_the_example_carries_a_comment_or_quotes():
    for name, value in docker_env_file(EXAMPLE.read_text()).items():
        assert " #" not in value and not value.startswith("#"), f"{name} has an inline comment: {value!r}"
        assert value == value.strip(), f"{name} has blanks around its value: {value!r}"
        assert not (value and value[0] in "'\"" and value[-1] == value[0]), f"{name} is quoted: {value!r}"


def test_the_example_documents_every_variable_the_settings_read():
    text = EXAMPLE.read_text()
    documented = set(re.findall(r"^(?:# )?([A-Z][A-Z0-9_]*)=", text, flags=re.MULTILINE))

    missing = settings_variables() - documented

    assert not missing, f"not in .env.example: {sorted(missing)}"
    assert {"LABQUEUE_SECRET_KEY", "EMAIL_HOST", "DATABASE_URL", "LABQUEUE_SUPPORT_CONTACT"} <= documented


def _manage(args: list[str], values: dict[str, str]) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", **values}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_django_starts_with_the_example_and_a_real_secret_key():
    values = {**docker_env_file(EXAMPLE.read_text()), "LABQUEUE_SECRET_KEY": A_REAL_KEY}

    run = _manage(["check", "--deploy"], values)

    assert run.returncode == 0, run.stderr
    # What check --deploy still says is campus IT's to decide (README "Pointing it at a real cluster").
    assert set(re.findall(r"\(security\.W\d+\)", run.stderr + run.stdout)) <= {"(security.W021)"}


def test_the_examples_placeholder_secret_key_stops_the_start():
    run = _manage(["check"], docker_env_file(EXAMPLE.read_text()))

    assert run.returncode != 0
    assert "LABQUEUE_SECRET_KEY: still the placeholder from .env.example" in run.stderr


def test_the_readme_settings_table_lists_every_variable_the_settings_read():
    readme = (REPO / "README.md").read_text()
    table = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", readme, flags=re.MULTILINE))

    missing = settings_variables() - table

    assert not missing, f"not in the README's settings table: {sorted(missing)}"
