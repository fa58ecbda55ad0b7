"""Search: the FAISS index over the embeddings and the near-duplicate graph it yields.

- :mod:`~nlsim.search.index`: exact or approximate inner-product index, on CPU or GPUs, saved with the
  identity of its vectors;
- :mod:`~nlsim.search.neighbors`: each item's k nearest neighbours above a threshold, as unique pairs.
"""
