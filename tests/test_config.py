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


def test_threads_come_from_the_environment_and_a_bad_value_is_named(monkeypatch):
    monkeypatch.delenv("EVALKIT_THREADS", raising=False)
    assert config.threads() is None  # onnxruntime's default: every core
    monkeypatch.setenv("EVALKIT_THREADS", "3")
    assert config.threads() == 3
    for bad in ("0", "two", "-1", "1.5"):
        monkeypatch.setenv("EVALKIT_THREADS", bad)
        with pytest.raises(config.ConfigError, match=f"EVALKIT_THREADS='{bad}'"):
            config.threads()


@pytest.mark.slow  # loads the real model
@pytest.mark.parametrize("setting, expected", [("1", 1), ("2", 2)])
def test_the_models_session_runs_on_the_threads_evalkit_threads_names(isolated, monkeypatch, setting, expected):
    from evalkit.embeddings import Embedder, ModelSpec

    monkeypatch.setenv("EVALKIT_THREADS", setting)
    embedder = Embedder(ModelSpec("sentence-transformers/all-MiniLM-L6-v2", "packaged", 256, 160))
    session = embedder.model.model.model  # fastembed's ONNX model's onnxruntime session
    assert session.get_session_options().intra_op_num_threads == expected


def test_a_bad_evalkit_threads_is_one_line_exit_2(tiny, monkeypatch, capsys):
    from .conftest import one_line_error

    home, _ = tiny
    monkeypatch.setenv("EVALKIT_THREADS", "all")
    assert main(["search", "walrus", "--docs", str(home / "docs"), "--arm", "semantic"]) == 2
    one_line_error(capsys, "EVALKIT_THREADS='all'")
