"""Training: fine-tune the bi-encoder and its reranker on the annotated pairs, and the learning curve.

- :mod:`~nlsim.training.config`: :class:`~nlsim.training.config.FinetuneConfig` and its records by concern;
- :mod:`~nlsim.training.data`: the pairs of a run (split, converted, checked);
- :mod:`~nlsim.training.bi_encoder`: the bi-encoder loop; :mod:`~nlsim.training.losses`: CoSENT, MSE;
- :mod:`~nlsim.training.cross_encoder`, :mod:`~nlsim.training.reranker`: the reranker;
  :mod:`~nlsim.training.side_by_side`: its cross-encoder trained beside the bi-encoder on a CPU;
- :mod:`~nlsim.training.silver`: silver pairs (Augmented SBERT);
- :mod:`~nlsim.training.finetune`: the whole run and the model folder; :mod:`~nlsim.training.model_card`;
- :mod:`~nlsim.training.learning_curve`: test Spearman against training size;
- :mod:`~nlsim.training.optim`: seeding, schedule, frozen embeddings.
"""
