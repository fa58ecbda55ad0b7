"""Fixtures for the encoder tests: the fast MiniLM-L3 model, converted into a private temporary home."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def l3_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh models folder holding a converted MiniLM-L3 (built once per session, ~3 s)."""
    from nlsim.encoders.minilm_l3_convert import ensure_minilm_l3

    # "session-": kept until the session ends (tests/conftest.py, SESSION_TEMP)
    root = tmp_path_factory.mktemp("session-models")
    ensure_minilm_l3(root=root)
    return root


@pytest.fixture(scope="session")
def l3(l3_root: Path):  # noqa: ANN201 - Encoder
    """MiniLM-L3 on the torch backend (the ONNX Runtime path is tested against it in test_onnx_backend)."""
    from nlsim.encoders import load_encoder

    return load_encoder(l3_root / "paraphrase-MiniLM-L3-v2", backend="torch")


@pytest.fixture()
def with_prefix(l3):  # noqa: ANN001, ANN201
    """A second Encoder over the same weights with the e5 prefix (the shared fixture is left untouched)."""
    from nlsim.encoders import Encoder

    return Encoder(
        l3.model,
        l3.tokenizer,
        name="l3-prefixed",
        model_id="test:l3-prefixed",
        path=l3.path,
        prefix="query: ",
        max_length=l3.max_length,
    )
