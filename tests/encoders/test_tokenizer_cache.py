"""A model folder's tokenizer is loaded once per content of its files (nlsim.encoders.tokenizer_cache)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from nlsim.encoders.registry import registry_folder
from nlsim.encoders.tokenizer_cache import content_key, load_tokenizer, save_tokenizer


def _copy(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(registry_folder("paraphrase-MiniLM-L3-v2"), tmp_path / name))


def test_the_same_files_give_the_same_tokenizer(tmp_path: Path) -> None:
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b")
    assert load_tokenizer(a) is load_tokenizer(b)


def test_a_changed_file_loads_again(tmp_path: Path) -> None:
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b")
    special = b / "special_tokens_map.json"
    special.write_text(special.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert content_key(a) != content_key(b)
    first, second = load_tokenizer(a), load_tokenizer(b)
    assert first is not second
    assert first("a cat")["input_ids"] == second("a cat")["input_ids"]


def test_the_weights_are_not_part_of_the_key(tmp_path: Path) -> None:
    a = _copy(tmp_path, "a")
    before = content_key(a)
    (a / "model.safetensors").write_bytes(b"other weights")
    assert content_key(a) == before
    assert not any(k.startswith("model.safetensors:") for k in before)


def test_a_folder_without_tokenizer_json_loads_each_time(tmp_path: Path) -> None:
    a = _copy(tmp_path, "a")
    (a / "tokenizer.json").unlink()
    assert load_tokenizer(a) is not load_tokenizer(a)


def test_a_saved_tokenizer_leaves_the_last_calls_settings_out(tmp_path: Path) -> None:
    tok = load_tokenizer(_copy(tmp_path, "a"))
    tok(["a cat sits on the mat"], truncation=True, max_length=3, padding="max_length")
    save_tokenizer(tok, tmp_path / "saved")
    spec = json.loads((tmp_path / "saved" / "tokenizer.json").read_text(encoding="utf-8"))
    assert spec["truncation"] is None and spec["padding"] is None


def test_a_saved_tokenizer_keys_as_the_folder_it_was_loaded_from(tmp_path: Path) -> None:
    """A fine-tuned model's folder holds its base's tokenizer beside files of its own (a card, a
    calibration): it takes the base's loaded tokenizer (the base folder's tokenizer files written by nlsim,
    as the bundled e5's are)."""
    original = _copy(tmp_path, "original")
    base = tmp_path / "base"
    save_tokenizer(load_tokenizer(original), base)
    shutil.copy(original / "config.json", base / "config.json")
    tok = load_tokenizer(base)
    assert tok.init_kwargs.get("local_files_only")  # transformers records how it was loaded
    saved = tmp_path / "saved"
    save_tokenizer(tok, saved)
    shutil.copy(original / "config.json", saved / "config.json")
    (saved / "calibration.json").write_text("{}", encoding="utf-8")
    (saved / "README.md").write_text("a card", encoding="utf-8")
    assert "local_files_only" not in (saved / "tokenizer_config.json").read_text(encoding="utf-8")
    assert content_key(saved) == content_key(base)
    assert load_tokenizer(saved) is tok


def test_a_saved_encoder_keys_as_the_folder_it_was_loaded_from(tmp_path: Path) -> None:
    """An encoder saved, loaded and saved again (a fine-tuned model's folder from its base's): its folder's
    tokenizer files hold the same bytes, so the second folder takes the first one's tokenizer."""
    from nlsim.encoders import load_encoder

    first = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch").save(tmp_path / "first")
    again = load_encoder(str(first), backend="torch")
    second = again.save(tmp_path / "second")
    (second / "training.json").write_text("{}", encoding="utf-8")
    assert content_key(second) == content_key(first)
    assert load_tokenizer(second) is load_tokenizer(first)
