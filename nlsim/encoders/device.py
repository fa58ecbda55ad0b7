"""Where a model runs: the GPU when torch sees one, else the CPU, chosen at run time.

``NLSIM_DEVICE`` (``cpu``, ``cuda``, ``cuda:1``; ``mps`` or ``xpu`` where torch has them) forces a device,
and one this torch build or machine cannot run is refused in one line (:class:`ConfigError`); otherwise
:func:`default_device` takes ``cuda`` when torch sees a CUDA device and the CPU otherwise. Training,
embedding and reranking follow it; the CPU path stays the tested default (the machines this is tested on
have no GPU). FAISS picks its own GPUs (:mod:`nlsim.search.index`, ``faiss.get_num_gpus()``).
:func:`batch_size_for` is the batch an inference job runs in where none is given: a GPU takes larger batches
than a CPU gains from. The attention kernel is PyTorch's scaled-dot-product attention
(``attn_implementation="sdpa"``) on either device: its fused kernels on a GPU, its math kernel on a CPU.

Example:
    >>> import os
    >>> os.environ["NLSIM_DEVICE"] = "cpu"
    >>> str(default_device())
    'cpu'
    >>> del os.environ["NLSIM_DEVICE"]
    >>> batch_size_for("cpu"), batch_size_for("cuda:0")
    (64, 256)
"""

from __future__ import annotations

import os

import torch

from nlsim.environment import device_name
from nlsim.errors import ConfigError

CPU_BATCH = 64
"""Texts (or pair readings) per inference batch on a CPU: larger batches pad more and gain nothing."""
GPU_BATCH = 256
"""... and on a GPU, where a batch of 64 short texts leaves most of the chip idle."""


def batch_size_for(device: torch.device | str) -> int:
    """The inference batch size for ``device`` when the caller gives none."""
    return GPU_BATCH if torch.device(device).type == "cuda" else CPU_BATCH


def default_device() -> torch.device:
    """``NLSIM_DEVICE`` when set (:func:`nlsim.environment.device_name`), else ``cuda`` when torch sees a
    GPU, else ``cpu``."""
    forced = device_name()
    if forced:
        given = os.environ["NLSIM_DEVICE"]  # as typed, in the messages, as the other variables' are
        try:
            device = torch.device(forced)
        except RuntimeError as exc:
            raise ConfigError(f"NLSIM_DEVICE={given!r} is not a torch device ({exc})") from exc
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"NLSIM_DEVICE={given!r}, but torch sees no CUDA device")
        if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
            seen = torch.cuda.device_count()
            raise ConfigError(
                f"NLSIM_DEVICE={given!r}, but torch sees {seen} CUDA device{'s' if seen != 1 else ''} "
                f"(cuda:0{f' to cuda:{seen - 1}' if seen > 1 else ''}); name one of them, or cuda"
            )
        if device.type not in ("cpu", "cuda") and not _available(device.type):
            raise ConfigError(
                f"NLSIM_DEVICE={given!r}: this torch build or machine has no {device.type!r} device to run "
                f"models on; use cpu{' or cuda' if torch.cuda.is_available() else ''} (or leave it unset)"
            )
        return device
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def _available(kind: str) -> bool:
    """Whether torch can run models on a device of type ``kind`` here (Apple's ``mps``, Intel's ``xpu``);
    every other type (``hip``, ``vulkan``, ``meta``: no data, ...) is not one nlsim runs on."""
    if kind == "mps":
        backend = getattr(torch.backends, "mps", None)
        return bool(backend is not None and backend.is_available())
    if kind == "xpu":
        xpu = getattr(torch, "xpu", None)
        return bool(xpu is not None and xpu.is_available())
    return False
