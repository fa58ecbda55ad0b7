"""Where a model runs: the GPU when torch sees one, else the CPU, chosen at run time.

``NLSIM_DEVICE`` (``cpu``, ``cuda``, ``cuda:1``) forces a device; otherwise :func:`default_device` takes
``cuda`` when torch sees a CUDA device and the CPU otherwise. Training, embedding and reranking follow it;
the CPU path stays the tested default (the machines this is tested on have no GPU). FAISS picks its own
GPUs (:mod:`nlsim.search.index`, ``faiss.get_num_gpus()``).

Example:
    >>> import os
    >>> os.environ["NLSIM_DEVICE"] = "cpu"
    >>> str(default_device())
    'cpu'
    >>> del os.environ["NLSIM_DEVICE"]
"""

from __future__ import annotations

import os

import torch

from nlsim.errors import ConfigError


def default_device() -> torch.device:
    """``NLSIM_DEVICE`` when set, else ``cuda`` when torch sees a GPU, else ``cpu``."""
    forced = os.environ.get("NLSIM_DEVICE", "").strip()
    if forced:
        try:
            device = torch.device(forced)
        except RuntimeError as exc:
            raise ConfigError(f"NLSIM_DEVICE={forced!r} is not a torch device ({exc})") from exc
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"NLSIM_DEVICE={forced!r}, but torch sees no CUDA device")
        return device
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
