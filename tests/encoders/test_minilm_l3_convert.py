"""MiniLM-L3 from ONNX: every weight mapped, same numbers as the ONNX graph, sensible similarities."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nlsim.encoders.minilm_l3_convert import find_onnx, onnx_state_dict


def test_every_bert_weight_is_mapped() -> None:
    sd, layers = onnx_state_dict(find_onnx())
    assert layers == 3
    for i in range(3):
        for part in (
            "attention.self.query",
            "attention.self.key",
            "attention.self.value",
            "attention.output.dense",
            "intermediate.dense",
            "output.dense",
        ):
            assert f"encoder.layer.{i}.{part}.weight" in sd
    assert sd["encoder.layer.0.intermediate.dense.weight"].shape == (1536, 384)  # [out, in], as nn.Linear
    assert sd["encoder.layer.0.output.dense.weight"].shape == (384, 1536)
    assert sd["embeddings.word_embeddings.weight"].shape == (30522, 384)


@pytest.mark.slow
def test_hidden_states_match_the_onnx_graph(l3) -> None:  # noqa: ANN001
    import torch
    from onnx.reference import ReferenceEvaluator

    texts = ["A man is playing a guitar.", "Stocks fell."]
    feats = l3.tokenizer(texts, padding=True, return_tensors="np")
    onnx_out = ReferenceEvaluator(str(find_onnx())).run(
        None,
        {
            "input_ids": feats["input_ids"].astype(np.int64),
            "attention_mask": feats["attention_mask"].astype(np.int64),
        },
    )
    with torch.no_grad():
        ours = l3.model(
            input_ids=torch.tensor(feats["input_ids"]), attention_mask=torch.tensor(feats["attention_mask"])
        ).last_hidden_state.numpy()
    hidden = [o for o in onnx_out if getattr(o, "shape", None) == ours.shape]
    assert hidden, "no hidden-state output in the ONNX graph"
    np.testing.assert_allclose(hidden[0], ours, atol=1e-4)


def test_sts_like_similarities(l3) -> None:  # noqa: ANN001
    pairs_hi = [
        ("A man is playing a guitar.", "A person plays the guitar."),
        ("The stock market fell sharply today.", "Stocks dropped steeply today."),
    ]
    pairs_lo = [
        ("A man is playing a guitar.", "The stock market fell sharply today."),
        ("A woman is slicing an onion.", "Stocks dropped steeply today."),
    ]

    def cos(a: str, b: str) -> float:
        e = l3.encode([a, b], progress=False)
        return float(e[0] @ e[1])

    hi = min(cos(a, b) for a, b in pairs_hi)
    lo = max(cos(a, b) for a, b in pairs_lo)
    assert hi > 0.5 and lo < 0.3 and hi - lo > 0.3


def test_folder_has_tokenizer_and_metadata(l3_root: Path) -> None:
    folder = l3_root / "paraphrase-MiniLM-L3-v2"
    names = ("tokenizer.json", "vocab.txt", "config.json", "model.safetensors", "nlsim.json", "manifest.json")
    for name in names:
        assert (folder / name).is_file(), name
