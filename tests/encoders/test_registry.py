"""load_encoder: registry names, local folders, hub names and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nlsim.encoders import DEFAULT_MODEL, available_models, load_encoder
from nlsim.encoders.registry import MODELS
from nlsim.errors import ConfigError


def test_default_and_names() -> None:
    assert DEFAULT_MODEL == "multilingual-e5-small"
    assert available_models()[0] == DEFAULT_MODEL
    assert set(available_models()) == {"multilingual-e5-small", "all-MiniLM-L6-v2", "paraphrase-MiniLM-L3-v2"}
    assert MODELS["multilingual-e5-small"].prefix == "query: "


@pytest.mark.parametrize("bad", ["no-such-model", "someone/no-such-model"])
def test_unknown_name_is_a_clear_error(bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match=r"unknown model .*not a registry name.*multilingual-e5-small.*hub"):
        load_encoder(bad)


def test_current_outside_a_model_store_says_where_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match=r"--model current is a model store's promoted model.*versions"):
        load_encoder("current")


@pytest.mark.parametrize("name", ["v0002", "v0002-1a2b3c4d", "v2"])
def test_a_version_name_is_not_looked_up_on_the_hub(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``nlsim embed --model v0002`` (a model store's version named as a model) was looked up on the hub and
    refused as "could not be fetched from the Hugging Face hub (offline? ...)": it says what to give."""
    import huggingface_hub

    def no_lookup(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"looked up on the hub: {args}")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", no_lookup)
    with pytest.raises(ConfigError) as err:
        load_encoder(name)
    message = str(err.value)
    assert f"unknown model {name!r}" in message and "hub" not in message
    assert (
        "a model store's version" in message
        and "models/versions/" in message
        and "--model current" in message
    )


def test_missing_local_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such model folder"):
        load_encoder(str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="no such model folder"):
        load_encoder("./models/nope")


def test_file_and_empty_folder_are_clear_errors(tmp_path: Path) -> None:
    f = tmp_path / "model.bin"
    f.write_bytes(b"x")
    with pytest.raises(ConfigError, match="is a file"):
        load_encoder(f)
    with pytest.raises(ConfigError, match="no config.json"):
        load_encoder(tmp_path)


def test_bad_options() -> None:
    with pytest.raises(ConfigError, match="quantize"):
        load_encoder("paraphrase-MiniLM-L3-v2", quantize="int4")


def test_registry_name_loads_fast_model(l3_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(l3_root.parent))
    (l3_root.parent / "models").mkdir(exist_ok=True)
    enc = load_encoder("paraphrase-MiniLM-L3-v2")
    assert enc.model_id == "sentence-transformers/paraphrase-MiniLM-L3-v2"
    assert (enc.name, enc.dim, enc.prefix, enc.max_length) == ("paraphrase-MiniLM-L3-v2", 384, "", 256)


def test_minilm_l6_loads_without_a_report_of_the_pooler_nlsim_leaves_out(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Every command given ``--model all-MiniLM-L6-v2`` (a README model; ``nlsim evaluate --model
    all-MiniLM-L6-v2 --pairs stsb``, docs/finetuning.md) printed transformers' nine-line "BertModel LOAD
    REPORT" in colour codes before its first line, listing ``pooler.dense.*`` as UNEXPECTED, "not ok if
    you expect identical arch": the pooler nlsim leaves out on purpose (mean pooling). The model loads
    without it; a weight the model lacks is still refused by nlsim's own check."""
    capfd.readouterr()
    enc = load_encoder("all-MiniLM-L6-v2")
    err = capfd.readouterr().err
    assert enc.dim == 384
    assert "LOAD REPORT" not in err and "pooler" not in err, err


def test_minilm_l6_from_its_package() -> None:
    enc = load_encoder("all-MiniLM-L6-v2")
    assert enc.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert enc.prefix == "" and enc.dim == 384
    e = enc.encode(
        ["A man is playing a guitar.", "Someone plays guitar.", "The stock market fell."], progress=False
    )
    assert e[0] @ e[1] > 0.7 > 0.2 > e[0] @ e[2]


def test_local_folder_without_nlsim_json(tmp_path: Path, l3_root: Path) -> None:
    import shutil

    src = l3_root / "paraphrase-MiniLM-L3-v2"
    dst = tmp_path / "plain-hf"
    shutil.copytree(src, dst)
    (dst / "nlsim.json").unlink()
    (dst / "manifest.json").unlink()  # a plain Hugging Face folder: no nlsim file list either
    enc = load_encoder(dst)
    assert enc.model_id == "local:plain-hf" and enc.prefix == "" and enc.max_length == 256
    ref = load_encoder(src)
    assert enc.fingerprint == ref.fingerprint  # same weights, tokenizer and prefix
    np.testing.assert_allclose(enc.encode(["hi"], progress=False), ref.encode(["hi"], progress=False))


def test_sentence_transformers_prompt_is_used_when_no_nlsim_json(tmp_path: Path, l3_root: Path) -> None:
    import shutil

    dst = tmp_path / "st-folder"
    shutil.copytree(l3_root / "paraphrase-MiniLM-L3-v2", dst)
    (dst / "nlsim.json").unlink()
    (dst / "manifest.json").unlink()  # a sentence-transformers folder: no nlsim file list either
    (dst / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "query: "}, "default_prompt_name": "query"})
    )
    assert load_encoder(dst).prefix == "query: "
    assert load_encoder(dst, prefix="").prefix == ""


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ("[]", "not a JSON object"),
        ('{"max_length": "256"}', "'max_length'"),
        ('{"max_length": 12.5}', "'max_length'"),
        ('{"prefix": 5}', "'prefix'"),
        ('{"weights_sha256": ["model.safetensors"]}', "'weights_sha256'"),
    ],
)
def test_an_nlsim_json_written_by_hand_with_a_value_of_the_wrong_kind_is_refused_by_name(
    settings: str, named: str, tmp_path: Path, l3_root: Path
) -> None:
    """A Hugging Face folder takes its prefix and max length from an nlsim.json the user writes beside its
    files (docs/encoders.md); one holding the max length in quotes ("256"), a prefix that is not text or
    a list where an object goes stopped the load, or the first encode, in a TypeError or AttributeError
    traceback from deep in nlsim. Each is a ConfigError naming the file and the key."""
    import shutil

    dst = tmp_path / "hand-set"
    shutil.copytree(l3_root / "paraphrase-MiniLM-L3-v2", dst)
    (dst / "manifest.json").unlink()  # a plain Hugging Face folder, with an nlsim.json of the user's
    (dst / "nlsim.json").write_text(settings, encoding="utf-8")
    with pytest.raises(ConfigError, match="nlsim.json") as caught:
        load_encoder(dst).encode(["Floods in the north"], progress=False)
    assert named in str(caught.value)
    (dst / "nlsim.json").write_text('{"prefix": "query: ", "max_length": 64}', encoding="utf-8")
    enc = load_encoder(dst)
    assert (enc.prefix, enc.max_length) == ("query: ", 64)


@pytest.mark.slow
def test_int8_option(l3_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path))
    fp32 = load_encoder(l3_root / "paraphrase-MiniLM-L3-v2", backend="torch")
    q = load_encoder(l3_root / "paraphrase-MiniLM-L3-v2", quantize="int8")  # = torch, int8
    assert (q.options["backend"], q.options["precision"]) == ("torch", "int8")
    # the same model, run another way: the fingerprint (calibrations, indexes) stays, cached vectors do not
    assert q.fingerprint == fp32.fingerprint and q.vectors_tag == "torch-int8" and fp32.vectors_tag == ""
    texts = ["A man is playing a guitar.", "Stocks fell sharply on Monday."]
    a, b = fp32.encode(texts, progress=False), q.encode(texts, progress=False)
    assert ((a * b).sum(1) > 0.85).all()  # lossy, but the same vectors roughly
    q.save(tmp_path / "saved")  # the torch model itself stays fp32: it saves as such
    np.testing.assert_allclose(load_encoder(tmp_path / "saved", backend="torch").encode(texts), a, atol=1e-6)


@pytest.mark.slow
def test_e5_loads_with_prefix_and_handles_chinese() -> None:
    enc = load_encoder("multilingual-e5-small")
    assert (enc.model_id, enc.prefix, enc.dim) == ("intfloat/multilingual-e5-small", "query: ", 384)
    assert enc.tokenizer.convert_ids_to_tokens(enc.tokenize(["台灣"])["input_ids"][0])[:4] == [
        "<s>",
        "▁que",
        "ry",
        ":",
    ]
    e = enc.encode(
        ["台湾半导体产业营收创新高", "台灣半導體產業營收創新高", "今天股市大跌", "足球比赛结果"],
        progress=False,
    )
    assert e[0] @ e[1] > 0.9
    assert e[0] @ e[1] > e[0] @ e[2] and e[0] @ e[1] > e[0] @ e[3]


def test_a_folder_without_its_tokenizer_or_config_files_is_refused_by_the_missing_file(
    tmp_path: Path,
) -> None:
    """A folder not saved by nlsim that lost its tokenizer's files would load with a tokenizer knowing no
    word (every text embedding alike); one that lost config.json beside its weights is a damaged model
    folder, not "not a model folder"; a folder with neither is no model folder."""
    from nlsim.encoders.registry import _transformer_subfolder, check_tokenizer_files
    from nlsim.errors import StateError

    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}')
    (folder / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizer"}')
    with pytest.raises(
        StateError, match=r"m/tokenizer\.json: missing, and the folder holds no other tokenizer"
    ):
        check_tokenizer_files(folder, folder)
    (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nfloods\n")  # a slow tokenizer's vocabulary
    check_tokenizer_files(folder, folder)
    (folder / "config.json").unlink()
    (folder / "model.safetensors").write_bytes(b"weights")
    with pytest.raises(
        StateError, match=r"m/config\.json: missing; the folder holds a model's model\.safetensors"
    ):
        _transformer_subfolder(folder)
    (folder / "model.safetensors").unlink()
    with pytest.raises(ConfigError, match=r"m: not a model folder \(no config\.json\)"):
        _transformer_subfolder(folder)


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ("[]", "not a JSON object"),
        ("null", "not a JSON object"),
        ("5", "not a JSON object"),
        ('"query: "', "not a JSON object"),
        ('{"prompts": {"query": "query: "}, "default_prompt_name": "qu', "not valid JSON"),
        ("", "not valid JSON"),
        ('{"prompts": ["query: "], "default_prompt_name": "query"}', "'prompts'"),
        ('{"prompts": {"query": 5}, "default_prompt_name": "query"}', "'prompts'"),
        ('{"prompts": {"query": "query: "}, "default_prompt_name": ["query"]}', "'default_prompt_name'"),
    ],
)
def test_a_sentence_transformers_config_that_is_not_an_object_of_prompts_is_refused_by_name(
    settings: str, named: str, tmp_path: Path, l3_root: Path
) -> None:
    """A sentence-transformers folder without nlsim.json takes its prefix from the default prompt of its
    config_sentence_transformers.json; one holding a list, a number or null stopped the load in an
    AttributeError, a list as the prompt's name in a TypeError, a prompt that is a number the first
    encode, and one cut short was read as no prompt at all (the model read without its prefix). Each is a
    ConfigError naming the file and the key; one written with a byte-order mark is read."""
    import shutil

    dst = tmp_path / "st-folder"
    shutil.copytree(l3_root / "paraphrase-MiniLM-L3-v2", dst)
    (dst / "nlsim.json").unlink()
    (dst / "manifest.json").unlink()  # a sentence-transformers folder: no nlsim file list either
    st = dst / "config_sentence_transformers.json"
    st.write_text(settings, encoding="utf-8")
    with pytest.raises(ConfigError, match="config_sentence_transformers.json") as caught:
        load_encoder(dst).encode(["Floods in the north"], progress=False)
    assert named in str(caught.value)
    st.write_text('{"prompts": {"query": "query: "}, "default_prompt_name": "query"}', encoding="utf-8-sig")
    assert load_encoder(dst).prefix == "query: "


@pytest.mark.parametrize("settings", ['{"prefix": null, "max_length": 64}', '{"max_length": 64}'])
def test_an_nlsim_json_that_gives_no_prefix_leaves_it_to_the_sentence_transformers_prompt(
    settings: str, tmp_path: Path, l3_root: Path
) -> None:
    """A folder's prefix comes from nlsim.json, else the sentence-transformers default prompt, else none
    (docs/encoders.md). An nlsim.json written by hand to set the max length alone, or with "prefix": null
    (a key's "not given"), had the folder's texts read without the prompt its model was trained with."""
    import shutil

    dst = tmp_path / "hand-set"
    shutil.copytree(l3_root / "paraphrase-MiniLM-L3-v2", dst)
    (dst / "manifest.json").unlink()  # a sentence-transformers folder with an nlsim.json of the user's
    (dst / "nlsim.json").write_text(settings, encoding="utf-8")
    (dst / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "query: "}, "default_prompt_name": "query"})
    )
    enc = load_encoder(dst)
    assert (enc.prefix, enc.max_length) == ("query: ", 64)
    (dst / "config_sentence_transformers.json").unlink()
    enc = load_encoder(dst)
    assert (enc.prefix, enc.max_length) == ("", 64)
    assert enc.encode(["Floods in the north"], progress=False).shape[0] == 1


@pytest.mark.parametrize(
    ("modules", "named"),
    [
        ("5", "not a JSON list"),
        ("null", "not a JSON list"),
        ("[5]", "not a JSON list"),
        ('[{"type": "sentence_transformers.models.Transformer", "path": 0}]', "not a JSON list"),
        ('[{"type": "sentence_transformers.models.Transformer", "path": "0_Tr', "not valid JSON"),
        ("", "not valid JSON"),
    ],
)
def test_a_damaged_modules_json_is_refused_by_name(
    modules: str, named: str, tmp_path: Path, l3_root: Path
) -> None:
    """A sentence-transformers folder keeps its transformer in a subfolder its modules.json names; a
    modules.json holding a number or null, or a module path that is not text, stopped the load in a
    TypeError, and one cut short had the folder called no model folder at all. Each is a ConfigError
    naming modules.json; the folder loads once the file is whole."""
    import shutil

    dst = tmp_path / "st-folder"
    shutil.copytree(l3_root / "paraphrase-MiniLM-L3-v2", dst / "0_Transformer")
    (dst / "0_Transformer" / "nlsim.json").unlink()
    (dst / "0_Transformer" / "manifest.json").unlink()
    (dst / "modules.json").write_text(modules, encoding="utf-8")
    with pytest.raises(ConfigError, match="modules.json") as caught:
        load_encoder(dst)
    assert named in str(caught.value)
    (dst / "modules.json").write_text(
        json.dumps(
            [
                {
                    "idx": 0,
                    "name": "0",
                    "path": "0_Transformer",
                    "type": "sentence_transformers.models.Transformer",
                }
            ]
        ),
        encoding="utf-8",
    )
    assert load_encoder(dst).dim == 384


def test_an_nlsim_json_written_with_a_byte_order_mark_is_read(tmp_path: Path, l3_root: Path) -> None:
    """An nlsim.json written by hand in an editor that puts a UTF-8 byte-order mark first was refused as
    'not valid JSON (Unexpected UTF-8 BOM)', where config_sentence_transformers.json beside it is read; it
    is read, and one that is not UTF-8 at all is refused naming the file."""
    import shutil

    dst = tmp_path / "hand-set"
    shutil.copytree(l3_root / "paraphrase-MiniLM-L3-v2", dst)
    (dst / "manifest.json").unlink()  # a plain Hugging Face folder, with an nlsim.json of the user's
    (dst / "nlsim.json").write_text('{"prefix": "query: ", "max_length": 64}', encoding="utf-8-sig")
    enc = load_encoder(dst)
    assert (enc.prefix, enc.max_length) == ("query: ", 64)
    (dst / "nlsim.json").write_bytes(b'{"prefix": "\xe9t\xe9: "}')
    with pytest.raises(ConfigError, match=r"nlsim\.json: not UTF-8 text"):
        load_encoder(dst)


def _st_modules(folder: Path, *modules: tuple[str, str]) -> None:
    """A sentence-transformers modules.json listing ``(type's last part, path)`` in order."""
    listed = [
        {"idx": i, "path": p, "type": f"sentence_transformers.models.{t}"} for i, (t, p) in enumerate(modules)
    ]
    (folder / "modules.json").write_text(json.dumps(listed), encoding="utf-8")


def test_the_transformer_module_is_the_one_read_whatever_the_order_and_only_with_its_config(
    tmp_path: Path,
) -> None:
    """A pooling module keeps a config.json of its own: listed first, it is still not the model's folder; a
    Transformer module whose folder lost config.json is no model folder, not a folder to load."""
    from nlsim.encoders.registry import _transformer_subfolder

    for sub in ("0_Transformer", "1_Pooling"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "config.json").write_text("{}")
    _st_modules(tmp_path, ("Pooling", "1_Pooling"), ("Transformer", "0_Transformer"))
    assert _transformer_subfolder(tmp_path) == tmp_path / "0_Transformer"
    (tmp_path / "0_Transformer" / "config.json").unlink()
    with pytest.raises(ConfigError, match=r"not a model folder \(no config\.json\)"):
        _transformer_subfolder(tmp_path)


def test_a_folder_nlsim_saved_before_manifests_that_lost_config_json_is_named_as_damaged(
    tmp_path: Path,
) -> None:
    """Its nlsim.json says nlsim saved it (with config.json): a StateError naming config.json as missing,
    not 'not a model folder'."""
    from nlsim.encoders.registry import _transformer_subfolder
    from nlsim.errors import StateError

    (tmp_path / "nlsim.json").write_text('{"prefix": "", "max_length": 64}')
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(StateError, match=r"config\.json: missing; nlsim saved this folder with it"):
        _transformer_subfolder(tmp_path)


def test_a_folder_inside_a_model_store_other_than_its_versions_is_not_called_the_store(
    tmp_path: Path,
) -> None:
    """The store itself and its versions/ folder are named as the store; any other folder in it is no model
    folder of its own."""
    from nlsim.encoders.registry import _transformer_subfolder
    from nlsim.io.model_store import ModelStore

    ModelStore(tmp_path / "store").claim()
    for folder in (tmp_path / "store", tmp_path / "store" / "versions"):
        folder.mkdir(exist_ok=True)
        with pytest.raises(ConfigError, match="a model store, not a model folder"):
            _transformer_subfolder(folder)
    (tmp_path / "store" / "other").mkdir()
    with pytest.raises(ConfigError, match=r"other: not a model folder \(no config\.json\)"):
        _transformer_subfolder(tmp_path / "store" / "other")


def test_a_sentencepiece_model_is_a_tokenizer_file(tmp_path: Path) -> None:
    """A folder whose tokenizer is a sentencepiece model (as XLM-R's) is not refused for lacking one."""
    from nlsim.encoders.registry import check_tokenizer_files

    (tmp_path / "config.json").write_text('{"model_type": "xlm-roberta"}')
    (tmp_path / "sentencepiece.bpe.model").write_bytes(b"spm")
    check_tokenizer_files(tmp_path, tmp_path)


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"max_length": True}, "'max_length' must be a whole number"),
        ({"weights_sha256": {"model.safetensors": 5}}, "'weights_sha256' must be an object"),
    ],
)
def test_a_true_max_length_or_a_digest_that_is_no_text_is_refused(settings: dict, named: str) -> None:
    from nlsim.encoders.registry import _checked_settings

    with pytest.raises(ConfigError, match=named):
        _checked_settings(Path("m/nlsim.json"), settings)


def test_an_empty_prefix_in_nlsim_json_overrules_the_sentence_transformers_prompt(tmp_path: Path) -> None:
    """ "prefix": "" is a prefix given (none), unlike null or no key: the folder's texts are read without
    the prompt its sentence-transformers config names."""
    from nlsim.encoders.registry import folder_settings

    (tmp_path / "nlsim.json").write_text('{"prefix": ""}')
    (tmp_path / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "query: "}, "default_prompt_name": "query"})
    )
    assert folder_settings(tmp_path)["prefix"] == ""
    (tmp_path / "nlsim.json").write_text('{"prefix": null}')
    assert folder_settings(tmp_path)["prefix"] == "query: "
