"""Settings a machine keeps once, for the command line, notebooks and scripts alike: which embedding model
the semantic arm runs, and from where; and, from the environment only, how many threads it may use.

Read in this order: ``$EVALKIT_MODEL`` / ``$EVALKIT_MODEL_DIR``, then ``[model]`` in the config file
(``$EVALKIT_CONFIG``, else ``$XDG_CONFIG_HOME/evalkit/config.toml``), written by ``evalkit config model``
or ``ek.use_model``. A model read from a local folder never needs a model hub, so choosing one also tells
the hub client to stay offline (``HF_HUB_OFFLINE``), in this process and every process it starts.
"""
from __future__ import annotations

import os
import tomllib
from pathlib import Path

import tomli_w

from .atomic import write_atomic

ENV = {"name": "EVALKIT_MODEL", "dir": "EVALKIT_MODEL_DIR"}


class ConfigError(Exception):
    """The config file cannot be read; the message names it."""


def path() -> Path:
    if env := os.environ.get("EVALKIT_CONFIG"):
        return Path(env)
    return Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "evalkit" / "config.toml"


def _read() -> dict:
    try:
        with open(path(), "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path()}: not valid TOML: {e}") from None


def model() -> dict[str, str]:
    """The configured model: ``name`` and ``dir`` (each "" when not set). A local folder (``dir``) sets
    ``HF_HUB_OFFLINE=1`` unless the environment says otherwise."""
    table = _read().get("model", {})
    out = {k: os.environ.get(env) or str(table.get(k, "")) for k, env in ENV.items()}
    if out["dir"]:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return out


def threads() -> int | None:
    """``$EVALKIT_THREADS``: the threads an embedding model computes on (None: onnxruntime's default, every
    core). On a machine whose cores are all busy (tests run in parallel, a shared CI runner) a second
    thread waits for a core and spins meanwhile: beside a busy loop, a cold semantic search of 29 pages took
    31.0 CPU-s on two threads and 23.8 on one, in the same 23.7 s (docs/speed.md)."""
    value = os.environ.get("EVALKIT_THREADS", "")
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"EVALKIT_THREADS={value!r}: not a whole number of threads of at least 1")
    return int(value)


def use_model(name: str, model_dir: str = "") -> Path:
    """Keep ``name`` (and the folder it loads from: a path, or ``packaged`` for all-MiniLM-L6-v2 from PyPI
    packages) in the config file for every later command and notebook; returns the file written."""
    data = _read()
    data["model"] = {"name": name, **({"dir": model_dir} if model_dir else {})}
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, tomli_w.dumps(data))
    return target
