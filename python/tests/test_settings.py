"""kiln's settings from Python (kiln._settings over the C++ table) and `kiln settings --json`."""

import json
import os
import subprocess

import pytest

from kiln import _kiln, _settings
from kiln.__main__ import program

# Values of each kind the flag rule sorts: empty, off words, on words, and others (on, warned).
FLAG_VALUES = ["", "0", "1", "false", "FALSE", "no", "Off", "true", "yes", "ON", "2", "maybe"]


@pytest.mark.parametrize("value", FLAG_VALUES)
def test_the_hooks_flag_rule_is_the_tables(monkeypatch, value):
    """flag_before_extension (the startup hook's, which may not load the extension) and the C++
    reader agree on every kind of value."""
    monkeypatch.setenv("KILN_TVM", value)
    assert _settings.flag_before_extension("KILN_TVM") == _kiln.setting_flag("KILN_TVM")


def test_readers_take_the_tables_defaults_and_refuse_wrong_values(monkeypatch):
    monkeypatch.delenv("KILN_POOL_TEMPLATE", raising=False)
    monkeypatch.delenv("KILN_REMOTE_CACHE_TIMEOUT", raising=False)
    assert _settings.flag("KILN_POOL_TEMPLATE") is True
    assert _settings.seconds("KILN_REMOTE_CACHE_TIMEOUT") == 2.0
    monkeypatch.setenv("KILN_POOL_TEMPLATE", "off")
    assert _settings.flag("KILN_POOL_TEMPLATE") is False
    monkeypatch.setenv("KILN_REMOTE_CACHE_TIMEOUT", "0.5")
    assert _settings.seconds("KILN_REMOTE_CACHE_TIMEOUT") == 0.5
    monkeypatch.setenv("KILN_REMOTE_CACHE_TIMEOUT", "forever")
    with pytest.raises(ValueError, match="KILN_REMOTE_CACHE_TIMEOUT must be a number of seconds"):
        _settings.seconds("KILN_REMOTE_CACHE_TIMEOUT")
    assert _settings.text("KILN_REMOTE_CACHE_MODE") == "read-only"
    with pytest.raises(ValueError, match="kiln has no setting KILN_NOPE"):
        _settings.flag("KILN_NOPE")


def test_the_template_switch_reads_the_setting(monkeypatch):
    from kiln.support._popen_template import Template  # pylint: disable=import-outside-toplevel

    monkeypatch.setenv("KILN_POOL_TEMPLATE", "no")
    assert Template.enabled() is False
    monkeypatch.setenv("KILN_POOL_TEMPLATE", "")
    assert Template.enabled() is True, "an empty value is no value: the default, on"


def test_kiln_settings_json_names_each_value_and_its_origin(tmp_path):
    kiln = program()
    if kiln is None:
        pytest.skip("no kiln program beside the package (build the kiln_python target)")
    config = tmp_path / "config" / "kiln"
    config.mkdir(parents=True)
    (config / "kiln.conf").write_text("# mine\nKILN_NVRTC_SPLIT = 4096\nKILN_SERVER_IDLE=5\n")
    os.chmod(config / "kiln.conf", 0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), KILN_SERVER_IDLE="30",
               KILN_REMOTE_CACHE="redis://:s3cret@cache.example:6379/2",
               KILN_REMOTE_CACHE_MODE="read-write")
    done = subprocess.run([kiln, "settings", "--json"], env=env, capture_output=True, text=True,
                          check=True, timeout=60)
    report = json.loads(done.stdout)
    rows = {row["name"]: row for row in report["settings"]}
    assert [row["name"] for row in report["settings"]] == [s["name"] for s in _kiln.settings()]
    assert report["file"] == str(config / "kiln.conf")
    assert rows["KILN_NVRTC_SPLIT"]["value"] == "4096"
    assert rows["KILN_NVRTC_SPLIT"]["origin"] == "file"
    assert rows["KILN_NVRTC_SPLIT"]["where"] == f"{config / 'kiln.conf'}:2"
    assert rows["KILN_SERVER_IDLE"]["value"] == "30", "the environment is above the file"
    assert rows["KILN_SERVER_IDLE"]["origin"] == "env"
    assert rows["KILN_REMOTE_CACHE_MODE"]["value"] == "read-write"
    assert rows["KILN_REMOTE_CACHE_TIMEOUT"]["value"] == "2"
    assert rows["KILN_REMOTE_CACHE_TIMEOUT"]["origin"] == "default"
    assert "s3cret" not in done.stdout, "the URL's password is printed"
    assert rows["KILN_REMOTE_CACHE"]["value"].startswith("redis://")
    assert "cache.example:6379" in rows["KILN_REMOTE_CACHE"]["value"]
    assert done.stderr == ""


def test_a_bad_line_in_the_settings_file_is_one_warning(tmp_path):
    kiln = program()
    if kiln is None:
        pytest.skip("no kiln program beside the package (build the kiln_python target)")
    conf = tmp_path / "kiln.conf"
    conf.write_text("KILN_NO_SUCH=1\nKILN_TVM=1\n")
    os.chmod(conf, 0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env["KILN_CONFIG"] = str(conf)
    done = subprocess.run([kiln, "settings"], env=env, capture_output=True, text=True, check=True,
                          timeout=60)
    assert f"{conf}:1: KILN_NO_SUCH is not a kiln setting" in done.stderr
    assert f"{conf}:2: KILN_TVM is read only from the environment" in done.stderr
    assert "KILN_TVM                        0" in done.stdout
