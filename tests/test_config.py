import pytest

from evalkit import config
from evalkit.cli import main


@pytest.fixture
def clean(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALKIT_CONFIG", str(tmp_path / "config.toml"))
    for env in ("EVALKIT_MODEL", "EVALKIT_MODEL_DIR", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(env, raising=False)
    return tmp_path / "config.toml"


def test_a_model_is_configured_once_and_read_everywhere(clean, monkeypatch, capsys):
    import os

    assert config.model() == {"name": "", "dir": ""} and "HF_HUB_OFFLINE" not in os.environ
    assert main(["config", "model", "sentence-transformers/all-MiniLM-L6-v2", "--dir", "packaged"]) == 0
    assert str(clean) in capsys.readouterr().out
    assert config.model() == {"name": "sentence-transformers/all-MiniLM-L6-v2", "dir": "packaged"}
    assert os.environ["HF_HUB_OFFLINE"] == "1"  # a local model never needs the hub
    monkeypatch.setenv("EVALKIT_MODEL", "other/model")  # the environment wins
    assert config.model()["name"] == "other/model"


def test_a_broken_config_file_is_named(clean, capsys):
    clean.write_text("[model\n")
    assert main(["config", "model"]) == 2
    assert f"{clean}: not valid TOML" in capsys.readouterr().err
