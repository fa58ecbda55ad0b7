"""Rerank: a cross-encoder rescores the pairs the bi-encoder finds.

- :mod:`~nlsim.rerank.cross_encoder`: the cross-encoder model (both headlines read together);
- :mod:`~nlsim.rerank.target`: the cross-encoder as :mod:`nlsim.inference` sees it, and its inference path
  for a job (ONNX Runtime or a lossy copy for large jobs);
- :mod:`~nlsim.rerank.reranker`: the rerank score (cosine and cross-encoder combined), its candidate floor,
  and the ``reranker/`` folder stored with a fine-tuned model.

Training lives in :mod:`nlsim.training` (``cross_encoder``, ``reranker``).
"""
