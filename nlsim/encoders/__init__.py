"""Sentence encoders: load a model by name or folder, embed texts, save for transformers/ST.

Example:
    >>> from nlsim.encoders import load_encoder
    >>> enc = load_encoder("paraphrase-MiniLM-L3-v2")
    >>> enc.encode(["hello world"], progress=False).shape
    (1, 384)
"""

from nlsim.encoders.encoder import Encoder, mean_pool
from nlsim.encoders.registry import DEFAULT_MODEL, MODELS, available_models, load_encoder

__all__ = ["DEFAULT_MODEL", "MODELS", "Encoder", "available_models", "load_encoder", "mean_pool"]
