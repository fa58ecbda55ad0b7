"""A saved encoder folder reloads in nlsim, plain transformers and sentence-transformers alike."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from nlsim.encoders import Encoder, load_encoder
from nlsim.errors import ConfigError

TEXTS = ["A man is playing a guitar.", "Stocks fell sharply on Monday.", "x", "Floods hit the north."]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory, l3: Encoder) -> tuple[Path, Encoder, np.ndarray]:
    enc = Encoder(
        l3.model,
        l3.tokenizer,
        name="l3-query",
        model_id="finetuned:l3-query",
        path=l3.path,
        prefix="query: ",
        max_length=128,
        base_model=l3.model_id,
    )
    folder = enc.save(tmp_path_factory.mktemp("saved") / "model")
    return folder, enc, enc.encode(TEXTS, progress=False)


def test_folder_contents(saved: tuple[Path, Encoder, np.ndarray]) -> None:
    folder, enc, _ = saved
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "modules.json",
        "nlsim.json",
        "sentence_bert_config.json",
        "config_sentence_transformers.json",
        "1_Pooling/config.json",
    ):
        assert (folder / name).is_file(), name
    meta = json.loads((folder / "nlsim.json").read_text())
    assert meta["prefix"] == "query: " and meta["max_length"] == 128
    assert meta["base_model"] == "sentence-transformers/paraphrase-MiniLM-L3-v2"
    pooling = json.loads((folder / "1_Pooling/config.json").read_text())
    assert pooling["pooling_mode_mean_tokens"] and not pooling["pooling_mode_cls_token"]
    st_conf = json.loads((folder / "config_sentence_transformers.json").read_text())
    assert st_conf["prompts"][st_conf["default_prompt_name"]] == "query: "
    assert not list(folder.parent.glob(".*tmp*")), "temporary folder left behind"


def test_reloads_in_nlsim(saved: tuple[Path, Encoder, np.ndarray]) -> None:
    folder, enc, emb = saved
    again = load_encoder(folder)
    assert (again.prefix, again.max_length, again.model_id) == ("query: ", 128, "finetuned:l3-query")
    assert again.base_model == enc.base_model
    assert again.fingerprint == enc.fingerprint
    np.testing.assert_allclose(again.encode(TEXTS, progress=False), emb, atol=1e-6)


def test_reloads_in_plain_transformers(saved: tuple[Path, Encoder, np.ndarray]) -> None:
    from transformers import AutoModel, AutoTokenizer

    folder, _, emb = saved
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder).eval()
    feats = tok(["query: " + t for t in TEXTS], padding=True, return_tensors="pt")
    with torch.no_grad():
        h = model(**feats).last_hidden_state
    m = feats["attention_mask"].unsqueeze(-1).float()
    vec = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=1).numpy()
    np.testing.assert_allclose(vec, emb, atol=2e-5)


def test_reloads_in_sentence_transformers_with_the_prefix(saved: tuple[Path, Encoder, np.ndarray]) -> None:
    from sentence_transformers import SentenceTransformer

    folder, _, emb = saved
    st = SentenceTransformer(str(folder), device="cpu")
    assert st.max_seq_length == 128
    np.testing.assert_allclose(st.encode(TEXTS), emb, atol=2e-5)  # default prompt "query: " applied


def test_save_refuses_a_foreign_folder(tmp_path: Path, l3: Encoder) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not a model folder"):
        l3.save(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_save_overwrites_a_previous_model_folder(tmp_path: Path, l3: Encoder) -> None:
    first = l3.save(tmp_path / "m")
    (first / "stale.bin").write_text("old")
    l3.save(first)
    assert not (first / "stale.bin").exists()
    assert load_encoder(first).fingerprint == l3.fingerprint
