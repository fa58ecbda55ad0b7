"""Encoder behaviour on the fast MiniLM-L3 model: shape, norms, order, determinism, prefix, truncation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nlsim.encoders import Encoder
from nlsim.errors import ConfigError

TEXTS = [
    "A man is playing a guitar.",
    "Someone plays the guitar on stage tonight while the crowd sings along loudly.",
    "Stocks fell sharply on Monday.",
    "x",
    "The central bank raised interest rates by a quarter point, surprising markets.",
    "A person is playing guitar.",
    "Heavy rain and floods hit the northern provinces; thousands were evacuated from their homes.",
]


def reference_embeddings(enc: Encoder, texts: list[str]) -> np.ndarray:
    """Plain transformers: one padded batch in input order, mean pooling, L2 normalisation."""
    feats = enc.tokenizer(
        [enc.prefix + t for t in texts],
        padding=True,
        truncation=True,
        max_length=enc.max_length,
        return_tensors="pt",
    )
    with torch.no_grad():
        hidden = enc.model(**feats).last_hidden_state
    mask = feats["attention_mask"].unsqueeze(-1).float()
    vec = (hidden * mask).sum(1) / mask.sum(1)
    return torch.nn.functional.normalize(vec, dim=1).numpy()


def test_shape_dtype_and_unit_norms(l3: Encoder) -> None:
    emb = l3.encode(TEXTS, progress=False)
    assert emb.shape == (len(TEXTS), l3.dim) == (7, 384)
    assert emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)


def test_matches_unsorted_single_batch_reference(l3: Encoder) -> None:
    np.testing.assert_allclose(l3.encode(TEXTS, progress=False), reference_embeddings(l3, TEXTS), atol=2e-5)


@pytest.mark.slow
@pytest.mark.parametrize("batch_size", [1, 2, 3, 64])
def test_rows_follow_input_order_whatever_the_batching(l3: Encoder, batch_size: int) -> None:
    base = l3.encode(TEXTS, batch_size=64, progress=False)
    np.testing.assert_allclose(l3.encode(TEXTS, batch_size=batch_size, progress=False), base, atol=2e-5)
    perm = np.random.default_rng(0).permutation(len(TEXTS))
    shuffled = l3.encode([TEXTS[i] for i in perm], batch_size=batch_size, progress=False)
    np.testing.assert_allclose(shuffled, base[perm], atol=2e-5)


def test_token_budget_batches_give_the_same_rows(l3: Encoder) -> None:
    base = l3.encode(TEXTS, progress=False)
    np.testing.assert_allclose(l3.encode(TEXTS, max_tokens=20, progress=False), base, atol=2e-5)


def test_deterministic_and_repeated_texts_identical(l3: Encoder) -> None:
    a = l3.encode(TEXTS + TEXTS[:2], progress=False)
    b = l3.encode(TEXTS + TEXTS[:2], progress=False)
    assert np.array_equal(a, b)
    np.testing.assert_allclose(a[len(TEXTS)], a[0], atol=2e-5)


def test_similar_sentences_score_higher_than_unrelated(l3: Encoder) -> None:
    e = l3.encode(TEXTS, progress=False)
    assert e[0] @ e[5] > 0.8  # two guitar sentences
    assert e[0] @ e[2] < 0.3  # guitar vs stocks


def test_empty_input_and_bad_input(l3: Encoder) -> None:
    assert l3.encode([], progress=False).shape == (0, 384)
    with pytest.raises(TypeError):
        l3.encode("one string, not a list", progress=False)
    with pytest.raises(TypeError):
        l3.encode(["ok", None], progress=False)  # type: ignore[list-item]
    with pytest.raises(ConfigError):
        l3.encode(["ok"], batch_size=0, progress=False)


def test_prefix_is_prepended(l3: Encoder, with_prefix: Encoder) -> None:
    ids = with_prefix.tokenize(["hello"])["input_ids"][0].tolist()
    assert with_prefix.tokenizer.convert_ids_to_tokens(ids) == ["[CLS]", "query", ":", "hello", "[SEP]"]
    np.testing.assert_allclose(
        with_prefix.encode(["hello world"], progress=False),
        l3.encode(["query: hello world"], progress=False),
        atol=1e-6,
    )
    assert not np.allclose(
        with_prefix.encode(["hello world"], progress=False),
        l3.encode(["hello world"], progress=False),
        atol=1e-3,
    )


def test_truncation_at_max_length(l3: Encoder) -> None:
    short = Encoder(l3.model, l3.tokenizer, name="t", model_id="t", max_length=8)
    long_text = "word " * 300
    assert short.tokenize([long_text])["input_ids"].shape[1] == 8
    assert l3.tokenize([long_text])["input_ids"].shape[1] == 256
    a = short.encode([long_text], progress=False)
    b = short.encode(["word " * 6], progress=False)  # [CLS] + 6 words + [SEP] = 8 tokens
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_a_long_text_is_read_for_unknown_tokens_as_far_as_the_model_reads_it(l3: Encoder) -> None:
    """``unreadable`` reads a text as the model does, truncated at its max length: one of unknown tokens up
    to there embeds as they do, whatever follows; and a long body (``--text-fields title,body``) gives no
    tokenizer warning of 'indexing errors' that the run never meets."""
    key = "sequence-length-is-longer-than-the-specified-maximum"
    l3.tokenizer.deprecation_warnings.pop(key, None)  # the warning is given once per tokenizer
    long_unknown = "😀 " * (l3.max_length + 50) + "Floods force thousands from their homes"
    long_read = "Floods force thousands from their homes. " * 200
    assert l3.unreadable([long_unknown, long_read, "😀😀"]).tolist() == [True, False, True]
    assert key not in l3.tokenizer.deprecation_warnings


def test_a_max_length_past_the_model_positions_is_refused(l3: Encoder) -> None:
    """``--max-length 100000`` was taken, and the first text longer than the model's 512 positions stopped
    the run with a traceback from deep in the model ("The size of tensor a (3002) must match the size of
    tensor b (512)"; ONNX Runtime: "Attempting to broadcast an axis"); it is refused when the encoder is
    made or set, and the model's own limit is still taken and reads such a text."""
    assert l3.max_positions == 512

    def encoder(max_length: int) -> Encoder:
        return Encoder(l3.model, l3.tokenizer, name="l3", model_id="test:l3", max_length=max_length)

    with pytest.raises(ConfigError, match=r"max length of 100000 tokens .* reads at most 512 .*give 512 or"):
        encoder(100_000)
    fine = encoder(512)
    assert fine.encode([" ".join(["word"] * 3000)], progress=False).shape == (1, 384)
    with pytest.raises(ConfigError, match=r"reads at most 512"):
        fine.max_length = 513  # as training sets it from --max-length
    assert fine.max_length == 512


def test_forward_texts_keeps_autograd_and_is_not_normalised(l3: Encoder) -> None:
    out = l3.forward_texts(TEXTS[:3])
    assert out.requires_grad and out.shape == (3, 384)
    assert not torch.allclose(out.norm(dim=1), torch.ones(3), atol=1e-3)
    out.sum().backward()
    grads = [p.grad for p in l3.model.parameters() if p.grad is not None]
    assert grads
    l3.model.zero_grad(set_to_none=True)
    np.testing.assert_allclose(
        torch.nn.functional.normalize(out.detach(), dim=1).numpy(),
        l3.encode(TEXTS[:3], progress=False),
        atol=2e-5,
    )


def test_encode_restores_training_mode(l3: Encoder) -> None:
    l3.model.train()
    try:
        a = l3.encode(TEXTS[:2], progress=False)
        assert l3.model.training
    finally:
        l3.model.eval()
    np.testing.assert_allclose(a, l3.encode(TEXTS[:2], progress=False), atol=1e-6)  # dropout was off


def test_fingerprint_stable_and_sensitive(l3: Encoder, with_prefix: Encoder) -> None:
    from nlsim.encoders import load_encoder

    again = load_encoder(l3.path)
    assert again.fingerprint == l3.fingerprint
    assert len(l3.fingerprint) == 64
    assert with_prefix.fingerprint != l3.fingerprint
    before = again.fingerprint
    with torch.no_grad():
        again.model.embeddings.LayerNorm.bias[0] += 0.01
    assert again.fingerprint == before  # cached until refreshed
    assert again.refresh_fingerprint() != before


def test_a_tokenizer_that_has_run_finds_its_digest_without_parsing(
    l3: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nlsim.encoders import encoder as module
    from nlsim.encoders import load_encoder

    fresh = load_encoder(l3.path)
    backend = fresh.tokenizer.backend_tokenizer
    backend.no_truncation()  # as loaded (the tokenizer is shared: earlier tests may have run it)
    backend.no_padding()
    before = backend.to_str()
    module._SPEC_DIGESTS.clear()
    digest = module._tokenizer_digest(fresh.tokenizer)
    fresh.encode(TEXTS, progress=False)  # the backend now holds its truncation
    assert backend.to_str() != before

    def parsed(*args: object, **kwargs: object) -> None:
        raise AssertionError("the serialisation was parsed again")

    monkeypatch.setattr(module.json, "loads", parsed)
    assert module._tokenizer_digest(fresh.tokenizer) == digest
    monkeypatch.undo()
    module._SPEC_DIGESTS.clear()  # parsed afresh: the same digest, the run settings left out
    assert module._tokenizer_digest(fresh.tokenizer) == digest


def test_the_digest_key_leaves_out_only_the_top_level_run_settings() -> None:
    from nlsim.encoders.encoder import _without_run_settings

    raw = '{"version":"1.0","truncation":{"max_length":8,"s":[1,{"a":"}"}]},"padding":null,"model":{"x":1}}'
    assert _without_run_settings(raw) == '{"version":"1.0","model":{"x":1}}'
    for other in (
        '{"model":{"truncation":1,"padding":2}}',  # not at the top level
        '{"version":"1.0","model":{"truncation":1,"padding":2}}',
        '{"version":"1.0","padding":null,"truncation":null,"model":{}}',  # not in the library's order
        '{"version":"1.0","truncation":{bad',
    ):
        assert _without_run_settings(other) == other


def test_a_model_of_fewer_positions_than_the_default_length_reads_what_it_has(l3: Encoder, tmp_path) -> None:  # noqa: ANN001
    """Without --max-length the length is the model's own (256), but never more than it reads: a model of
    128 positions gets 128, and is not refused for the default it never asked for."""
    import copy

    from nlsim.encoders import load_encoder

    model = copy.deepcopy(l3.model)
    emb = model.embeddings
    emb.position_embeddings = torch.nn.Embedding.from_pretrained(emb.position_embeddings.weight[:128].clone())
    emb.register_buffer("position_ids", emb.position_ids[:, :128].clone(), persistent=False)
    emb.register_buffer("token_type_ids", emb.token_type_ids[:, :128].clone(), persistent=False)
    model.config.max_position_embeddings = 128
    model.save_pretrained(tmp_path / "short")
    l3.tokenizer.save_pretrained(tmp_path / "short")
    short = load_encoder(tmp_path / "short", backend="torch")
    assert short.max_positions == 128 and short.max_length == 128
    assert short.encode([" ".join(["word"] * 3000)], progress=False).shape == (1, 384)


def test_a_model_whose_config_gives_no_positions_has_no_limit() -> None:
    from types import SimpleNamespace

    from nlsim.encoders.encoder import model_positions

    assert model_positions(SimpleNamespace(max_position_embeddings=0, model_type="bert")) is None
    assert model_positions(SimpleNamespace(model_type="bert")) is None


def test_a_text_of_exactly_the_max_length_is_not_cut(l3: Encoder) -> None:
    short = Encoder(l3.model, l3.tokenizer, name="t", model_id="t", max_length=8)
    assert short.cut(["word " * 6, "word " * 7, ""]).tolist() == [False, True, False]  # [CLS] + 6 + [SEP] = 8


def test_the_prefix_takes_its_room_before_a_text_is_read_for_unknown_tokens(l3: Encoder) -> None:
    """With a two-token prefix, two special tokens and 8 tokens in all, the model reads four tokens of a
    text: four unknown ones are all it reads of '😀 x4 Floods'; an empty text is no text of unknown tokens."""
    short = Encoder(l3.model, l3.tokenizer, name="t", model_id="t", max_length=8, prefix="query: ")
    assert short.unreadable(["😀 " * 4 + "Floods", "😀 " * 3 + "Floods", ""]).tolist() == [True, False, False]


def test_a_changed_prefix_changes_the_fingerprint(l3: Encoder) -> None:
    enc = Encoder(l3.model, l3.tokenizer, name="t", model_id="t")
    before = enc.fingerprint
    enc.prefix = "query: "
    assert enc.fingerprint != before


def test_the_run_counts_and_names_the_first_long_or_unreadable_item(l3: Encoder) -> None:
    from nlsim.encoders.encoder import long_texts_said, unreadable_said

    said = long_texts_said(l3, ["Floods", "rain " * 300, "storm " * 300], ["n1", "n2", "n3"])
    assert said.startswith("long texts: 2 item(s) run past the 256 tokens") and "(e.g. 'n2')" in said
    said = unreadable_said(l3, ["Floods", "😀😀", "🎉"], ["n1", "n2", "n3"])
    assert said.startswith("unreadable texts: 2 item(s)") and "(e.g. 'n2': '😀😀')" in said


def test_a_tokenizer_without_a_padding_id_pads_with_0() -> None:
    from types import SimpleNamespace

    assert Encoder.pad_id(SimpleNamespace(tokenizer=SimpleNamespace(pad_token_id=None))) == 0  # type: ignore[arg-type]
    assert Encoder.pad_id(SimpleNamespace(tokenizer=SimpleNamespace(pad_token_id=1))) == 1  # type: ignore[arg-type]
