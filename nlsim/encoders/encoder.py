"""A sentence encoder: a BERT-style transformer, mean pooling, L2 normalisation.

``Encoder`` wraps a ``transformers`` model and its fast tokenizer, loaded from a local Hugging Face
folder. ``encode`` is the batch path (length-sorted batches, dynamic padding, ``torch.inference_mode``,
float32 L2-normalised output in input order); ``forward_texts`` is the training path (autograd on,
mean-pooled, not normalised).

Example:
    >>> from nlsim.encoders import load_encoder
    >>> enc = load_encoder("paraphrase-MiniLM-L3-v2")
    >>> emb = enc.encode(["a cat sits on the mat", "a dog runs"], progress=False)
    >>> emb.shape, emb.dtype.name
    ((2, 384), 'float32')
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nlsim.encoders.batching import first_of_each, lengths_of, pad_batch, sorted_batches
from nlsim.encoders.device import batch_size_for
from nlsim.encoders.lanes import lanes_for, run_batches
from nlsim.encoders.layers import hash_tensors, mean_pool
from nlsim.encoders.tokenizer_cache import save_tokenizer
from nlsim.errors import ConfigError
from nlsim.inference.choice import Choice
from nlsim.inference.target import WeightsWatch, config_digest
from nlsim.io.atomic import file_sha256
from nlsim.io.manifest import MANIFEST, saved_folder
from nlsim.io.ownership import is_owned
from nlsim.progress import Progress, counted

NLSIM_JSON = "nlsim.json"
OFFSET_POSITIONS = ("roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "data2vec-text")
"""Model types whose position ids start after the padding id (two of XLM-R's 514 positions are not read)."""


def model_positions(config: Any) -> int | None:
    """The most tokens a model with this ``transformers`` config reads: its position embeddings (less the
    padding offset of the RoBERTa family's), ``None`` when the config does not say.

    Example:
        >>> from types import SimpleNamespace as C
        >>> model_positions(C(max_position_embeddings=512, model_type="bert"))
        512
        >>> model_positions(C(max_position_embeddings=514, model_type="xlm-roberta", pad_token_id=1))
        512
    """
    n = getattr(config, "max_position_embeddings", None)
    if not isinstance(n, int) or n <= 0:
        return None
    if getattr(config, "model_type", "") in OFFSET_POSITIONS:
        n -= int(getattr(config, "pad_token_id", 0) or 0) + 1
    return n


_SPEC_DIGESTS: dict[str, str] = {}
"""The digest of each tokenizer serialisation seen, by its SHA-256: an e5 tokenizer's (8 MB of JSON) takes
about a second to parse and dump again, and each load of a model asks for it."""


def _tokenizer_digest(tokenizer: Any) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:  # pragma: no cover - slow tokenizers are refused at load time
        payload = json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()
    raw = backend.to_str()
    key = hashlib.sha256(_without_run_settings(raw).encode("utf-8")).hexdigest()
    if key not in _SPEC_DIGESTS:
        spec = json.loads(raw)
        spec.pop("truncation", None)
        spec.pop("padding", None)
        payload = json.dumps(spec, sort_keys=True, ensure_ascii=False)
        if len(_SPEC_DIGESTS) >= 16:  # a handful of tokenizers in one process; never a growing store
            _SPEC_DIGESTS.clear()
        _SPEC_DIGESTS[key] = hashlib.sha256(payload.encode("utf-8")).hexdigest()
    return _SPEC_DIGESTS[key]


_RUN_SETTINGS = ("truncation", "padding")
"""What a tokenizer's serialisation holds of how it was last run, not of what it computes: left out of its
digest (:func:`_tokenizer_digest`)."""


def _without_run_settings(raw: str) -> str:
    """A tokenizer's serialisation less its top-level ``truncation`` and ``padding`` values, which the
    tokenizers library writes right after ``version`` (``{"version":…,"truncation":…,"padding":…,``), found
    without parsing the rest: the key of the digest cache, so that a tokenizer that has encoded (and so
    holds its truncation) finds the digest its fresh load computed. Where the text does not begin so,
    ``raw`` itself (the cache then keys on the whole text, as before)."""
    decoder = json.JSONDecoder()
    head = '{"version":'
    if not raw.startswith(head):
        return raw
    try:
        _, at = decoder.raw_decode(raw, len(head))
        version = raw[:at]
        for name in _RUN_SETTINGS:
            key = f',"{name}":'
            if not raw.startswith(key, at):
                return raw
            _, at = decoder.raw_decode(raw, at + len(key))
    except ValueError:
        return raw
    return version + raw[at:]


def weight_files_sha256(folder: str | Path) -> dict[str, str]:
    """SHA-256 of each weights file (``*.safetensors``, ``*.bin``) in ``folder``, by file name."""
    folder = Path(folder)
    names = sorted(p.name for p in folder.iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file())
    return {name: file_sha256(folder / name) for name in names}


def weights_digest(model: torch.nn.Module) -> str:
    """SHA-256 over the model's tensors (names, dtypes, shapes and bytes), in name order.

    Two folders holding the same weights give the same digest whatever their file format. The unused
    BERT pooler and the ``position_ids`` buffer are left out.
    """
    h = hashlib.sha256()
    state = model.state_dict()
    hash_tensors(h, "", {k: v for k, v in state.items() if not k.startswith("pooler.")})
    return h.hexdigest()


class Encoder:
    """A sentence encoder over a transformers model and its fast tokenizer.

    Args:
        model: a ``transformers`` encoder (``BertModel``/``AutoModel``) returning ``last_hidden_state``.
        tokenizer: its fast tokenizer.
        name: short display name (a registry name or a folder name).
        model_id: stable id string (registry name, hub name, or ``local:<folder>``).
        path: the folder the model was loaded from (``None`` if built in memory).
        prefix: text put in front of every input (e5: ``"query: "``).
        max_length: truncation length in tokens, prefix and special tokens included.
        options: speed options in force (e.g. ``{"quantize": "int8"}``); part of the fingerprint.

    Example:
        >>> from nlsim.encoders import load_encoder
        >>> enc = load_encoder("paraphrase-MiniLM-L3-v2")
        >>> enc.dim, enc.prefix, enc.max_length
        (384, '', 256)
    """

    AUTO_ONNX_MIN_TEXTS = 1000  # backend="auto": texts in one encode() call before ONNX is set up

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Any,
        *,
        name: str,
        model_id: str,
        path: str | Path | None = None,
        prefix: str = "",
        max_length: int = 256,
        base_model: str | None = None,
        options: dict[str, Any] | None = None,
        device: str | torch.device | None = None,
    ) -> None:
        if not getattr(tokenizer, "is_fast", False):
            raise ConfigError(f"{name}: a fast tokenizer (tokenizer.json) is required")
        if max_length < 4:
            raise ConfigError(f"max_length must be at least 4, got {max_length}")
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.model_id = model_id
        self.path = Path(path) if path is not None else None
        self.max_length = int(max_length)  # checked against the positions the model has
        self.base_model = base_model or model_id
        self.options = dict(options or {})
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.model.to(self.device)
        self.model.eval()
        self._fingerprint: str | None = None
        self._prefix = prefix
        self._runner: Any = None  # the chosen inference path's runner (ONNX Runtime, bf16, fp16, int8)
        self._planner: Any = None  # decides the path lazily, see set_planner() and plan()
        self.choice: Any = None  # the nlsim.inference.choice.Choice in force, once decided
        self._small_job: int | None = None  # the largest job too small to choose a path for (see plan())
        self._watch = WeightsWatch(model)  # notices in-place weight changes, see mark_weights_changed()
        self._runner_version = 0
        self._planner_version = 0
        self._digest: tuple[int, str] | None = None  # (weights version, weights_digest)
        self._lower: tuple[tuple[int, int], str] | None = None  # ((weights version, layers), lower_digest)
        self.dim = int(model.config.hidden_size)

    @property
    def max_length(self) -> int:
        """Truncation length in tokens, prefix and special tokens included; at most :attr:`max_positions`."""
        return self._max_length

    @max_length.setter
    def max_length(self, value: int) -> None:
        value = int(value)
        limit = self.max_positions
        if limit is not None and value > limit:
            # beyond it the first text that long stopped the run with a traceback from deep in the model
            raise ConfigError(
                f"a max length of {value} tokens (--max-length, else the model folder's {NLSIM_JSON}): the "
                f"model {self.name} reads at most {limit} (the positions it has); give {limit} or less"
            )
        self._max_length = value

    @property
    def max_positions(self) -> int | None:
        """The most tokens the model reads (:func:`model_positions`)."""
        return model_positions(self.model.config)

    def __repr__(self) -> str:
        return (
            f"Encoder(name={self.name!r}, model_id={self.model_id!r}, dim={self.dim}, "
            f"prefix={self.prefix!r}, "
            f"max_length={self.max_length}, device={str(self.device)!r})"
        )

    # ------------------------------------------------------------------ identity
    @property
    def prefix(self) -> str:
        """Text put in front of every input; part of the fingerprint."""
        return self._prefix

    @prefix.setter
    def prefix(self, value: str) -> None:
        self._prefix = value
        self._fingerprint = None

    @property
    def fingerprint(self) -> str:
        """SHA-256 identifying what this encoder computes: config, weights, tokenizer, prefix, options.

        Computed once (hashing the weights takes about a second for e5) and cached; call
        :meth:`refresh_fingerprint` after changing the weights in place (e.g. fine-tuning).
        """
        if self._fingerprint is None:
            self._fingerprint = self._compute_fingerprint()
        return self._fingerprint

    def refresh_fingerprint(self) -> str:
        """Recompute :attr:`fingerprint` from the current weights."""
        self._fingerprint = None
        return self.fingerprint

    def use_runner(self, runner: Any) -> None:
        """Run :meth:`encode` through ``runner(features) -> pooled (n, dim)`` numpy arrays (``features``: the
        padded ``input_ids`` and ``attention_mask``).

        The runner is a compiled copy of the current weights (e.g. ONNX Runtime). If the torch weights change
        in place afterwards (fine-tuning), :meth:`encode` notices and falls back to torch.
        """
        self._runner = runner
        self._runner_version = self._weights_version()

    def set_planner(self, planner: Any) -> None:
        """Decide the inference path with ``planner`` (:class:`nlsim.encoders.planner.Planner`): at once
        when it is ``eager`` (a forced backend or precision), else at the first :meth:`encode` (or
        :meth:`plan`) of at least :attr:`AUTO_ONNX_MIN_TEXTS` texts."""
        self._planner = planner
        self._planner_version = self._weights_version()
        if planner is not None and planner.eager:
            self.plan(0)

    def plan(self, n_texts: int) -> Any:
        """The inference path (:class:`nlsim.inference.choice.Choice`) of a job of ``n_texts`` texts,
        decided once and its runner built (:func:`nlsim.inference.choice.settle`: cheap when the probe and
        the quality check are cached); ``None`` while the job is too small to be worth it (plain torch
        fp32)."""
        planner = self._planner
        if self.choice is not None or planner is None or self._lower_runner() is not None:
            return self.choice
        if self._weights_version() != self._planner_version:
            self._planner = None  # trained since loading: the probe and the quality check were for the old
            return None  # weights' exports; torch it is, as for a runner whose weights changed
        if not planner.eager and n_texts < self.AUTO_ONNX_MIN_TEXTS:
            self._small_job = max(self._small_job or 0, n_texts)
            return None
        self.choice, runner = planner.settle(self, n_texts)
        self.options["backend"], self.options["precision"] = self.choice.backend, self.choice.precision
        self.use_runner(runner)
        return self.choice

    def path_taken(self) -> Choice | None:
        """The inference path the jobs so far ran on, with why (:class:`nlsim.inference.choice.Choice`):
        :attr:`choice` once decided; before, where every job was too small to choose one for
        (``backend="auto"``, under :attr:`AUTO_ONNX_MIN_TEXTS` texts), plain torch fp32 as a small job, as
        the cross-encoder's small jobs say; ``None`` where no job ran, or the weights changed since loading.

        Example:
            >>> from nlsim.encoders import load_encoder
            >>> enc = load_encoder("paraphrase-MiniLM-L3-v2")
            >>> _ = enc.encode(["hello"], progress=False)
            >>> enc.path_taken().reason
            'a small job: 1 text, under the 1,000 a path is chosen for'
        """
        planner = self._planner
        if self.choice is not None or planner is None or planner.eager or self._small_job is None:
            return self.choice
        job = counted(self._small_job, "text", "texts")
        return Choice(
            "torch-fp32",
            f"a small job: {job}, under the {self.AUTO_ONNX_MIN_TEXTS:,} a path is chosen for",
            requested={"backend": planner.backend, "precision": planner.precision},
            device=str(self.device),
        )

    @property
    def vectors_tag(self) -> str:
        """``""`` when :meth:`encode` gives the exact fp32 vectors (torch or the checked ONNX export), else
        the lossy path (``"onnx-int8"``, ``"torch-bf16"``...): cached embeddings are keyed by it."""
        choice = self.choice
        return choice.tag if choice is not None else ""

    def weights_digest(self) -> str:
        """:func:`weights_digest` of the model, cached until a weight changes in place."""
        version = self._weights_version()
        if self._digest is None or self._digest[0] != version:
            self._digest = (version, weights_digest(self.model))
        return self._digest[1]

    def mark_weights_changed(self) -> None:
        """Record that the weights were changed in place (an optimizer step, a loaded state).

        torch's per-tensor version counters are bumped by most in-place writes but not by fused optimizer
        kernels (``AdamW(fused=True)``), so training calls this after every step: the compiled runner (a
        copy of the old weights) is dropped, and the digest and :attr:`fingerprint` are recomputed on demand.
        """
        self._watch.mark()
        self._fingerprint = None

    def _weights_version(self) -> int:
        return self._watch.version()

    def _active_runner(self) -> Any:
        if self._runner is None:
            return None
        if self._weights_version() != self._runner_version:
            self._runner = None  # a compiled copy of the old weights: back to torch fp32, for good
            self._planner = None
            self.choice = None
            self.options.pop("backend", None)
            self.options.pop("precision", None)
            return None
        return self._runner

    def _job_runner(self, runner: Any, n_texts: int, kept_vectors: bool = True) -> Any:
        """The runner of an :meth:`encode` job (``None``: plain torch fp32): the one asked for (``"torch"``:
        none), else the kept lower-layer states' (a cold chain's, :mod:`nlsim.encoders.lower_states`; with
        ``kept_vectors``, for a job that normalises, taking the vectors kept for this encoder), else the
        inference path planned for ``n_texts`` texts."""
        if isinstance(runner, str):
            if runner != "torch":
                raise ConfigError(f"runner must be 'torch' or a runner object, got {runner!r}")
            return None
        if runner is not None:
            return runner
        kept = self._lower_runner(kept_vectors)
        if kept is not None:
            return kept
        self.plan(n_texts)
        return self._active_runner()

    def _lower_runner(self, kept_vectors: bool = False) -> Any:
        """The runner of the lower-layer states kept for this model's frozen part
        (:mod:`nlsim.encoders.lower_states`), else ``None``; the digest is computed once per weights. With
        ``kept_vectors`` it takes the whole vectors kept for this encoder's fingerprint."""
        from nlsim.encoders import lower_states  # it builds on this module

        record = lower_states.current()
        if record is None:
            return None
        key = (self._weights_version(), record.layers)
        if self._lower is None or self._lower[0] != key:
            self._lower = (key, lower_states.lower_digest(self.model, record.layers))
        if self._lower[1] != record.digest:
            return None
        return record.runner(self.model, self.fingerprint if kept_vectors and record.vectors else "")

    def _compute_fingerprint(self) -> str:
        payload = {
            "config": config_digest(self.model.config),
            "weights": self.weights_digest(),
            "tokenizer": _tokenizer_digest(self.tokenizer),
            "prefix": self.prefix,
            "pooling": "mean",
            "normalise": "l2",
            # threads and backend change speed, not the numbers (the ONNX export is checked against torch);
            # a lossy precision is a way of running these weights, chosen per machine behind a quality
            # check: it keys the embedding cache (vectors_tag), not the model's identity
            "options": {
                k: self.options[k]
                for k in sorted(self.options)
                if k not in ("threads", "backend", "precision")
            },
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    # ------------------------------------------------------------------ tokenising
    def _with_prefix(self, texts: Sequence[str]) -> list[str]:
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not a single string")
        out = []
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"texts[{i}] is {type(t).__name__}, not str")
            out.append(self.prefix + t)
        return out

    def tokenize(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        """Tokenise ``texts`` (prefix added, truncated at ``max_length``, padded to the longest).

        Returns a dict of tensors (``input_ids``, ``attention_mask``, and ``token_type_ids`` when the
        model uses them) on the encoder's device, ready for :meth:`embed`.
        """
        batch = self.tokenizer(
            self._with_prefix(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        return {k: v.to(self.device) for k, v in batch.items()}

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of ``texts`` (prefix added, truncated at ``max_length``, not padded)."""
        enc = self.tokenizer(
            self._with_prefix(texts),
            padding=False,
            truncation=True,
            max_length=self.max_length,
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        return enc["input_ids"]

    def cut(self, texts: Sequence[str]) -> np.ndarray:
        """Whether each text runs past :attr:`max_length` (prefix and special tokens included), so that the
        model reads only its beginning: two texts alike up to there embed as one, whatever follows.

        >>> from nlsim.encoders import load_encoder
        >>> enc = load_encoder("paraphrase-MiniLM-L3-v2")
        >>> enc.cut(["Floods in the north", "rain " * 300]).tolist()
        [False, True]
        """
        if not len(texts):
            return np.zeros(0, dtype=bool)
        rows = self.tokenizer(
            self._with_prefix(texts), truncation=False, return_attention_mask=False, verbose=False
        )["input_ids"]
        return np.array([len(ids) > self.max_length for ids in rows], dtype=bool)

    def unreadable(self, texts: Sequence[str]) -> np.ndarray:
        """Whether the model reads nothing of each text: every token of it that the model reads (up to
        :attr:`max_length`; no prefix, no special token) is
        the tokenizer's unknown token or a bare word start (``▁``): ``𠀀𠀁`` to e5 (``▁``, ``<unk>``),
        ``😀😀`` to MiniLM (``[UNK]``). Every such text embeds as one vector, whatever it says.

        >>> from nlsim.encoders import load_encoder
        >>> enc = load_encoder("paraphrase-MiniLM-L3-v2")
        >>> enc.unreadable(["😀😀", "🎉", "Floods 😀", "- ..."]).tolist()
        [True, True, False, False]
        """
        unk = self.tokenizer.unk_token_id
        if unk is None or not len(texts):
            return np.zeros(len(texts), dtype=bool)
        # the tokens the model reads of each text (truncated as :meth:`tokenize` truncates, less its prefix
        # and special tokens): a text read as unknown tokens up to there embeds as one, whatever follows
        prefix = len(self.tokenizer(self.prefix, add_special_tokens=False)["input_ids"]) if self.prefix else 0
        room = max(1, self.max_length - self.tokenizer.num_special_tokens_to_add() - prefix)
        rows = self.tokenizer(
            list(texts),
            add_special_tokens=False,
            truncation=True,
            max_length=room,
            return_attention_mask=False,
        )["input_ids"]

        def blank(ids: list[int]) -> bool:
            pieces = self.tokenizer.convert_ids_to_tokens(ids)
            return all(i == unk or not str(p).strip("▁Ġ ") for i, p in zip(ids, pieces, strict=True))

        return np.array([unk in ids and blank(ids) for ids in rows], dtype=bool)

    # ------------------------------------------------------------------ forward
    def embed(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean-pooled (not normalised) sentence vectors for tokenised ``features``; keeps autograd."""
        out = self.model(**features)
        hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
        return mean_pool(hidden, features["attention_mask"])

    def forward_texts(self, texts: Sequence[str]) -> torch.Tensor:
        """Mean-pooled, NOT normalised vectors ``(n, dim)`` with autograd, for training.

        The caller sets ``encoder.model.train()`` if dropout is wanted; the encoder is put back in eval
        mode by :meth:`encode`.
        """
        return self.embed(self.tokenize(texts))

    def pad_id(self) -> int:
        """The tokenizer's padding id (0 when it has none)."""
        pid = self.tokenizer.pad_token_id
        return int(pid) if pid is not None else 0

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int | None = None,
        progress: bool = True,
        *,
        max_tokens: int | None = None,
        normalize: bool = True,
        runner: Any = None,
    ) -> np.ndarray:
        """Embed ``texts``: float32 ``(n, dim)``, L2-normalised, rows in input order.

        Texts are tokenised once; a text whose token ids another text before it has takes that one's vector
        (so no two batches hold the same ids, whichever order lanes run them in). The others are sorted by
        token length and cut into batches of ``batch_size`` (default:
        :func:`nlsim.encoders.device.batch_size_for` the encoder's device; fewer when ``max_tokens`` caps
        tokens per batch), each padded only to its own longest text. The job runs
        on the encoder's inference path (:attr:`choice`, decided at the first job big enough, see
        :meth:`plan`); ``runner`` overrides it for this call: ``"torch"`` (plain torch fp32, the reference
        numbers) or a runner object (``runner(features) -> pooled``).

        Example:
            >>> from nlsim.encoders import load_encoder
            >>> enc = load_encoder("paraphrase-MiniLM-L3-v2")
            >>> e = enc.encode(["short", "a much longer sentence about news"], batch_size=1, progress=False)
            >>> [round(float(x), 4) for x in (e ** 2).sum(axis=1)]
            [1.0, 1.0]
        """
        if batch_size is None:
            batch_size = batch_size_for(self.device)
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        texts = list(texts) if not isinstance(texts, str) else texts
        n = len(texts)
        out = np.zeros((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        ids = self.token_ids(texts)
        first, copies = first_of_each(ids)  # a text tokenised as another is computed once
        batches = [first[b] for b in sorted_batches(lengths_of(ids)[first], batch_size, max_tokens)]
        pad_id = self.pad_id()
        uses_types = "token_type_ids" in getattr(self.tokenizer, "model_input_names", [])
        runner = self._job_runner(runner, n, kept_vectors=normalize)
        was_training = self.model.training
        self.model.eval()
        # a tqdm bar in a terminal, plain lines in a log (nlsim.progress decides from stderr)
        bar = Progress(n, f"embed {self.name}", "texts") if progress else None

        def embed_rows(rows: np.ndarray) -> None:
            padded = pad_batch(ids, rows, pad_id)
            if runner is not None:
                v = np.asarray(runner(padded), dtype=np.float32)
                if normalize:
                    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
                out[rows] = v
                return
            feats = {
                "input_ids": torch.from_numpy(padded["input_ids"]).to(self.device),
                "attention_mask": torch.from_numpy(padded["attention_mask"]).to(self.device),
            }
            if uses_types:
                feats["token_type_ids"] = torch.zeros_like(feats["input_ids"])
            vec = self.embed(feats).float()
            if normalize:
                vec = torch.nn.functional.normalize(vec, p=2, dim=1)
            out[rows] = vec.cpu().numpy()

        try:
            lanes = lanes_for(self.device, runner, len(batches))
            run_batches(batches, embed_rows, lanes, bar.update if bar is not None else None)
            if len(copies):
                out[copies[:, 0]] = out[copies[:, 1]]
                if bar is not None:
                    bar.update(len(copies))
        finally:
            if bar is not None:
                bar.close()
            if was_training:
                self.model.train()
        return out

    # ------------------------------------------------------------------ saving
    def save(self, folder: str | Path) -> Path:
        """Write a folder that loads in transformers, sentence-transformers and :func:`load_encoder`.

        Contents: ``config.json`` + ``model.safetensors`` + tokenizer files (``AutoModel``/``AutoTokenizer``),
        ``modules.json``, ``1_Pooling/config.json`` (mean pooling), ``sentence_bert_config.json``,
        ``config_sentence_transformers.json`` (the prefix as the default prompt, so ST's ``encode``
        applies it), ``nlsim.json`` (prefix, max_length, base model id, SHA-256 of the weights file), the
        model marker (:mod:`nlsim.io.ownership`) and ``manifest.json``, the size and SHA-256 of every file
        (:mod:`nlsim.io.manifest`), checked when the folder is loaded. The folder appears whole or not at
        all; an existing folder is replaced only when nlsim wrote it as a model folder (or it is empty).

        Example:
            >>> import tempfile
            >>> from nlsim.encoders import load_encoder
            >>> enc = load_encoder("paraphrase-MiniLM-L3-v2")
            >>> out = enc.save(tempfile.mkdtemp() + "/copy")
            >>> sorted(p.name for p in out.iterdir())[:4]
            ['.nlsim.json', '1_Pooling', '2_Normalize', 'config.json']
        """
        target = Path(folder)
        if target.exists() and not (target.is_dir() and not any(target.iterdir())):
            if not is_owned(target, "model"):
                raise ConfigError(
                    f"{target}: exists and is not a model folder written by nlsim; refusing to overwrite"
                )
        with saved_folder(target, "model") as tmp:
            self.write_files(tmp)
        return target

    def write_files(self, folder: Path, extra_meta: dict[str, Any] | None = None) -> None:
        """Write the model's files (see :meth:`save`) into the existing, empty ``folder`` of a
        :func:`nlsim.io.manifest.saved_folder` (``nlsim.json`` says the folder has a manifest)."""
        if isinstance(self.model, torch.nn.Module) and any(
            getattr(m, "_packed_params", None) is not None for m in self.model.modules()
        ):
            raise ConfigError("a quantized model cannot be saved; save the fp32 model and quantize on load")
        self.model.save_pretrained(folder, safe_serialization=True)
        save_tokenizer(self.tokenizer, folder)
        self._write_st_files(folder)
        meta = {
            "format": 1,
            "name": self.name,
            "model_id": self.model_id,
            "base_model": self.base_model,
            "prefix": self.prefix,
            "max_length": self.max_length,
            "pooling": "mean",
            "normalize": True,
            "dim": self.dim,
            "weights_sha256": weight_files_sha256(folder),
            "manifest": MANIFEST,
            **(extra_meta or {}),
        }
        text = json.dumps(meta, indent=2, ensure_ascii=False) + "\n"
        (folder / NLSIM_JSON).write_text(text, encoding="utf-8")

    def _write_st_files(self, folder: Path) -> None:
        def dump(path: Path, obj: Any) -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

        st = "sentence_transformers.models."
        dump(
            folder / "modules.json",
            [
                {"idx": 0, "name": "0", "path": "", "type": st + "Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": st + "Pooling"},
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": st + "Normalize"},
            ],
        )
        (folder / "2_Normalize").mkdir(exist_ok=True)
        dump(
            folder / "1_Pooling" / "config.json",
            {
                "word_embedding_dimension": self.dim,
                "pooling_mode_cls_token": False,
                "pooling_mode_mean_tokens": True,
                "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False,
                "pooling_mode_weightedmean_tokens": False,
                "pooling_mode_lasttoken": False,
                "include_prompt": True,
            },
        )
        dump(
            folder / "sentence_bert_config.json", {"max_seq_length": self.max_length, "do_lower_case": False}
        )
        st_conf: dict[str, Any] = {
            "model_type": "SentenceTransformer",
            "prompts": {"query": self.prefix} if self.prefix else {},
            "default_prompt_name": "query" if self.prefix else None,
            "similarity_fn_name": "cosine",
        }
        dump(folder / "config_sentence_transformers.json", st_conf)


def long_texts_said(encoder: Any, texts: Sequence[str], ids: Sequence[Any]) -> str | None:
    """What a run says of the ``texts`` it embeds with ``encoder`` (items ``ids``, in order) that run past
    the tokens the encoder reads (:meth:`Encoder.cut`): their vectors say what their beginning says, the
    fields in ``--text-fields`` order (``None``: no such text, or an encoder that cannot tell).

    Example:
        >>> from nlsim.encoders import load_encoder
        >>> enc = load_encoder("paraphrase-MiniLM-L3-v2")
        >>> long_texts_said(enc, ["Floods", "rain " * 300], ["n1", "n2"])[:46]
        'long texts: 1 item(s) run past the 256 tokens '
        >>> long_texts_said(enc, ["Floods"], ["n1"]) is None
        True
    """
    check = getattr(encoder, "cut", None)
    if check is None or not len(texts):
        return None
    cut = check(texts)
    if not cut.any():
        return None
    first = str(ids[int(np.flatnonzero(cut)[0])])
    tokens = encoder.max_length
    return (
        f"long texts: {int(cut.sum())} item(s) run past the {tokens} tokens {encoder.name} reads "
        f"(e.g. {first!r}): only their first {tokens} tokens, in --text-fields order, are embedded, so two "
        "items alike there are alike to the model, whatever follows"
    )


def unreadable_said(encoder: Any, texts: Sequence[str], ids: Sequence[Any]) -> str | None:
    """What a run says of the ``texts`` it embeds with ``encoder`` (items ``ids``, in order) that the model
    reads nothing of (:meth:`Encoder.unreadable`): every such text embeds as one vector, so any two of them
    are alike at 1.0 whatever they say (``None``: no such text, or an encoder that cannot tell).

    Example:
        >>> from nlsim.encoders import load_encoder
        >>> enc = load_encoder("paraphrase-MiniLM-L3-v2")
        >>> unreadable_said(enc, ["Floods", "😀😀"], ["n1", "n2"]).split(" (e.g.")[0]
        'unreadable texts: 1 item(s) hold text paraphrase-MiniLM-L3-v2 reads as unknown tokens only'
        >>> unreadable_said(enc, ["Floods"], ["n1"]) is None
        True
    """
    check = getattr(encoder, "unreadable", None)
    if check is None or not len(texts):
        return None
    bad = check(texts)
    if not bad.any():
        return None
    return unreadable_message(
        encoder, bad, texts, ids, "they are one vector, alike to each other at 1.0 whatever they say"
    )


def unreadable_message(
    encoder: Any, bad: np.ndarray, texts: Sequence[str], ids: Sequence[Any], effect: str
) -> str:
    """The words a run says the ``texts`` (items ``ids``) that ``bad`` marks in: the model reads nothing of
    them (:meth:`Encoder.unreadable`), the first named, and what the run made of them (``effect``)."""
    first = int(np.flatnonzero(bad)[0])
    return (
        f"unreadable texts: {int(bad.sum())} item(s) hold text {encoder.name} reads as unknown tokens only "
        f"(e.g. {str(ids[first])!r}: {texts[first][:40]!r}), so their vectors say nothing of it: {effect}"
    )
