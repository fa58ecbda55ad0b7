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


def test_the_key_holds_the_files_a_tokenizer_reads_by_name_and_in_name_order(tmp_path: Path) -> None:
    from nlsim.io.model_cache import known_sha256

    read = [
        "Vocab.TXT",
        "bpe.codes",
        "chat_template.jinja",
        "config.json",
        "merges.txt",
        "sentencepiece.bpe.model",
        "source.spm",
        "special_tokens_map.json",
        "tokenizer.json",
    ]
    unread = ["README.md", "calibration.json", "model.safetensors", "vocab_embeddings.safetensors", "x.onnx"]
    for i, name in enumerate(sorted(read + unread, key=lambda n: n[::-1])):  # made out of name order
        (tmp_path / name).write_text(f"file {i}", encoding="utf-8")
    (tmp_path / "tokenizer_parts").mkdir()  # a subfolder is not read
    key = content_key(tmp_path)
    assert key == tuple(f"{name}:{known_sha256(tmp_path / name)}" for name in sorted(read))


def test_loaded_tokenizers_are_kept_four_at_most_the_oldest_going_first(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    import transformers

    from nlsim.encoders import tokenizer_cache

    calls: list[tuple[str, bool]] = []

    def from_pretrained(folder: str, use_fast: bool, local_files_only: bool) -> object:
        calls.append((Path(folder).name, local_files_only))
        return object()

    monkeypatch.setattr(tokenizer_cache, "_loaded", {})
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", from_pretrained)
    folders = []
    for i in range(5):
        folder = tmp_path / f"f{i}"
        folder.mkdir()
        (folder / "tokenizer.json").write_text(f'{{"n": {i}}}', encoding="utf-8")
        folders.append(folder)
    first = [load_tokenizer(f) for f in folders[:4]]
    assert [load_tokenizer(f) for f in folders[:4]] == first  # four kept
    load_tokenizer(folders[4], local_files_only=False)  # a fifth: the oldest goes
    assert load_tokenizer(folders[3]) is first[3]
    assert load_tokenizer(folders[0]) is not first[0]
    assert calls == [("f0", True), ("f1", True), ("f2", True), ("f3", True), ("f4", False), ("f0", True)]


def test_a_saved_tokenizer_leaves_out_every_load_flag() -> None:
    class Backend:
        def __init__(self) -> None:
            self.cleared: list[str] = []

        def no_truncation(self) -> None:
            self.cleared.append("truncation")

        def no_padding(self) -> None:
            self.cleared.append("padding")

    class Tokenizer:
        def __init__(self) -> None:
            self.backend_tokenizer = Backend()
            self.init_kwargs = {"is_local": True, "local_files_only": True, "model_max_length": 512}
            self.saved_with: dict | None = None

        def save_pretrained(self, folder: object) -> None:
            self.saved_with = dict(self.init_kwargs)

    tok = Tokenizer()
    save_tokenizer(tok, "unused")
    assert tok.saved_with == {"model_max_length": 512}
    assert sorted(tok.backend_tokenizer.cleared) == ["padding", "truncation"]
