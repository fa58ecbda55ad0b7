"""The model a run judges with: the encoder, its reranker and the threshold of a pair.

- :mod:`~nlsim.models.settings`: :class:`~nlsim.models.settings.ModelSettings`, what a run asks of its
  model (which, the threshold, how it runs, its caches), and the model names a run starts from;
- :mod:`~nlsim.models.threshold`: :func:`~nlsim.models.threshold.resolve_threshold`, the threshold and
  where it came from, checked against the model it was calibrated for;
- :mod:`~nlsim.models.choice`: :func:`~nlsim.models.choice.load_model`, the ``model`` stage of a run: the
  encoder (``current`` found in the model store), its reranker and the threshold, and what the report shows
  of them.
"""
