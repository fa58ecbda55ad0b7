"""How a model runs: its inference paths, chosen on the machine in hand and checked for quality.

One home for both model kinds (the bi-encoder and the reranker's cross-encoder):

- :mod:`~nlsim.inference.paths`: the paths (a backend and a precision) and which the options allow;
- :mod:`~nlsim.inference.cpu`: the CPU in hand and its instruction sets;
- :mod:`~nlsim.inference.target`: the one :class:`~nlsim.inference.target.Target` that builds, probes and
  runs a path for any model kind (the encoders and the reranker each describe theirs);
- :mod:`~nlsim.inference.onnx`: the ONNX Runtime runners (export, check, int8 copy, cache);
- :mod:`~nlsim.inference.gpu`: the GPU a model sits on and the half precisions it has;
- :mod:`~nlsim.inference.lossy_verdict`: the stored quality check of the lossy paths and its verdict;
- :mod:`~nlsim.inference.probe`: the cached timing of each path;
- :mod:`~nlsim.inference.choice`: the pick (:func:`~nlsim.inference.choice.select`);
- :mod:`~nlsim.inference.choice`'s :func:`~nlsim.inference.choice.settle`: the one loop that chooses,
  builds and falls back, for both model kinds.

The quality check itself runs both model kinds on annotated pairs, so it is made a floor above them
(:mod:`nlsim.training.lossy_check`).
"""
