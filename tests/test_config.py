"""Settings: documented in the README, defaults, precedence, validation, the secret key."""
from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from labapp import PROJECT_ROOT, create_app
from labapp.config import SETTINGS, ConfigError, ensure_secret_key, load_settings
from tests.conftest import dispose

README = PROJECT_ROOT / "README.md"
_ROW = re.compile(r"^\| `(LABAPP_\w+)` \| ([^|]*) \|")


def readme_settings(text: str) -> dict[str, str]:
    """Settings-table rows of a README: name → default cell."""
    rows: dict[str, str] = {}
    for line in text.splitlines():
        match = _ROW.match(line)
        if match:
            assert match[1] not in rows, f"{match[1]} is documented twice"
            rows[match[1]] = match[2].strip()
    return rows


def undocumented_settings(text: str) -> list[str]:
    """Declared settings the README's table lacks."""
    documented = readme_settings(text)
    return [setting.env_name for setting in SETTINGS if setting.env_name not in documented]


@pytest.fixture
def instance(tmp_path: Path) -> Path:
    path = tmp_path / "instance"
    path.mkdir()
    return path


def _environ(instance: Path, **variables: str) -> dict[str, str]:
    return {"LABAPP_INSTANCE_PATH": str(instance),
            **{f"LABAPP_{name}": value for name, value in variables.items()}}


# --- documentation ----------------------------------------------------------------------

def test_readme_documents_exactly_the_declared_settings() -> None:
    documented = set(readme_settings(README.read_text()))
    declared = {setting.env_name for setting in SETTINGS}

    assert undocumented_settings(README.read_text()) == []
    assert documented - declared == set(), "README documents settings that do not exist"


def test_readme_check_fails_when_a_row_is_missing() -> None:
    text = "\n".join(line for line in README.read_text().splitlines()
                     if not line.startswith("| `LABAPP_MAX_UPLOAD_MB`"))

    assert undocumented_settings(text) == ["LABAPP_MAX_UPLOAD_MB"]


def test_readme_states_the_literal_defaults() -> None:
    """Settings with a plain default show it in the README (``100``, ``true``, ...)."""
    documented = readme_settings(README.read_text())
    for setting in SETTINGS:
        if setting.default is None:
            continue
        literal = str(setting.default).lower()
        assert f"`{literal}`" in documented[setting.env_name], setting.env_name


# --- defaults and precedence --------------------------------------------------------------

def test_defaults(instance: Path) -> None:
    values = load_settings(environ=_environ(instance))

    assert values["INSTANCE_PATH"] == str(instance.resolve())
    assert values["DATABASE_URL"] == f"sqlite:///{instance.resolve() / 'labapp.db'}"
    assert values["ON_PREMISES"] is True
    assert values["MAX_UPLOAD_MB"] == 100
    assert values["SECURE_COOKIES"] is False
    assert values["SECRET_KEY"] is None
    assert values["ADMIN_PASSWORD"] is None
    assert set(values) == {setting.name for setting in SETTINGS}


def test_default_instance_is_in_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    values = load_settings(environ={})

    assert values["INSTANCE_PATH"] == str(tmp_path.resolve() / "instance")
    assert values["DATABASE_URL"] == f"sqlite:///{tmp_path.resolve() / 'instance' / 'labapp.db'}"


def test_precedence_environment_over_instance_file_over_default(instance: Path) -> None:
    (instance / "config.py").write_text(
        "LABAPP_MAX_UPLOAD_MB = 5\n"
        "LABAPP_LOGIN_MAX_FAILURES = 7\n"
        "LABAPP_ON_PREMISES = 'no'\n"
        "helper = 'not a setting, ignored'\n")

    values = load_settings(environ=_environ(instance, MAX_UPLOAD_MB="9"))

    assert values["MAX_UPLOAD_MB"] == 9          # environment beats the file
    assert values["LOGIN_MAX_FAILURES"] == 7     # the file beats the default
    assert values["ON_PREMISES"] is False        # text in the file is parsed like the env
    assert values["LOGIN_WINDOW_SECONDS"] == 300  # untouched: the default


def test_overrides_beat_the_environment(instance: Path) -> None:
    values = load_settings({"MAX_UPLOAD_MB": 3, "ADMIN_PASSWORD": None},
                           environ=_environ(instance, MAX_UPLOAD_MB="9",
                                            ADMIN_PASSWORD="from-the-environment"))

    assert values["MAX_UPLOAD_MB"] == 3
    assert values["ADMIN_PASSWORD"] is None


def test_test_suite_variables_are_not_settings(instance: Path) -> None:
    values = load_settings(environ=_environ(instance, TEST_BACKEND="postgresql",
                                            TEST_ANYTHING="x"))

    assert "TEST_BACKEND" not in values


# --- validation -------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "raw"), [
    ("MAX_UPLOAD_MB", "abc"),
    ("MAX_UPLOAD_MB", "0"),
    ("MAX_UPLOAD_MB", "-3"),
    ("ON_PREMISES", "maybe"),
    ("DATABASE_URL", "mysql://x"),
    ("DATABASE_URL", "not a url"),
    ("SECRET_KEY", "  "),
    ("SEARCH_BACKEND", "elastic"),
    ("FOO", "1"),
])
def test_invalid_environment_value_is_named(instance: Path, name: str, raw: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings(environ=_environ(instance, **{name: raw}))

    assert f"LABAPP_{name}" in str(raised.value)


def test_the_postgresql_search_backend_needs_a_postgresql_database(instance: Path) -> None:
    """Refused on SQLite with a message that says what to set instead (issue 34 §1)."""
    with pytest.raises(ConfigError, match="LABAPP_SEARCH_BACKEND='postgresql': needs a "
                                          "PostgreSQL database"):
        load_settings(environ=_environ(instance, SEARCH_BACKEND="postgresql"))
    settings = load_settings(environ=_environ(
        instance, SEARCH_BACKEND="postgresql",
        DATABASE_URL="postgresql+psycopg://labapp@db.example/labapp"))
    assert settings["SEARCH_BACKEND"] == "postgresql"
    assert load_settings(environ=_environ(instance))["SEARCH_BACKEND"] == "whoosh"


def test_every_invalid_setting_is_listed_at_once(instance: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings(environ=_environ(instance, MAX_UPLOAD_MB="abc", ON_PREMISES="maybe",
                                       DATABASE_URL="mysql://x", FOO="1",
                                       LOGIN_MAX_FAILURES="0"))

    message = str(raised.value)
    for name in ("MAX_UPLOAD_MB", "ON_PREMISES", "DATABASE_URL", "FOO", "LOGIN_MAX_FAILURES"):
        assert f"LABAPP_{name}" in message
    assert "LABAPP_LOGIN_WINDOW_SECONDS" not in message


@pytest.mark.parametrize(("name", "value"), [
    ("MAX_UPLOAD_MB", 0),
    ("MAX_UPLOAD_MB", True),
    ("MAX_UPLOAD_MB", 1.5),
    ("ON_PREMISES", 1),
])
def test_typed_values_are_validated_too(instance: Path, name: str, value: object) -> None:
    """Values that are not text (overrides, ``instance/config.py``) get the same checks."""
    (instance / "config.py").write_text(f"LABAPP_{name} = {value!r}\n")
    with pytest.raises(ConfigError, match=f"LABAPP_{name}"):
        load_settings(environ=_environ(instance))
    with pytest.raises(ConfigError, match=f"LABAPP_{name}"):
        load_settings({name: value}, environ={"LABAPP_INSTANCE_PATH": str(instance.parent)})


def test_unknown_override_is_refused(instance: Path) -> None:
    with pytest.raises(ConfigError, match="NO_SUCH_THING"):
        load_settings({"NO_SUCH_THING": 1}, environ=_environ(instance))


# --- the secret key -----------------------------------------------------------------------

def test_secret_key_is_generated_once_and_private(tmp_path: Path) -> None:
    instance = tmp_path / "not-yet-created"

    first = ensure_secret_key(instance)
    second = ensure_secret_key(instance)

    key_file = instance / "secret_key"
    assert len(first) >= 32
    assert first == second == key_file.read_text().strip()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert [path.name for path in instance.iterdir()] == ["secret_key"]  # no temporaries left


# --- create_app ---------------------------------------------------------------------------

def _app_settings(instance: Path, **overrides: object) -> dict[str, object]:
    return {"INSTANCE_PATH": str(instance), "SECRET_KEY": None,
            "DATABASE_URL": f"sqlite:///{instance / 'labapp.db'}", **overrides}


def test_create_app_refuses_a_bad_setting(instance: Path) -> None:
    with pytest.raises(ConfigError, match="LABAPP_MAX_UPLOAD_MB"):
        create_app(_app_settings(instance, MAX_UPLOAD_MB="abc"))


def test_create_app_derives_flask_config(instance: Path) -> None:
    app = create_app(_app_settings(instance, MAX_UPLOAD_MB=7))
    try:
        assert app.config["MAX_CONTENT_LENGTH"] == 7 * 1024 * 1024
        assert app.config["SECRET_KEY"] == (instance / "secret_key").read_text().strip()
        assert app.config["LABAPP"]["MAX_UPLOAD_MB"] == 7
    finally:
        dispose(app)


def test_create_app_uses_a_configured_secret_key(instance: Path) -> None:
    app = create_app(_app_settings(instance, SECRET_KEY="configured-key"))
    try:
        assert app.config["SECRET_KEY"] == "configured-key"
        assert not (instance / "secret_key").exists()
    finally:
        dispose(app)


def test_secret_key_fallbacks_are_read_space_separated_and_default_to_none(
        instance: Path) -> None:
    assert not load_settings(environ=_environ(instance))["SECRET_KEY_FALLBACKS"]
    values = load_settings(environ=_environ(instance, SECRET_KEY_FALLBACKS=" old-1\told-2 "))
    assert values["SECRET_KEY_FALLBACKS"] == ("old-1", "old-2")
