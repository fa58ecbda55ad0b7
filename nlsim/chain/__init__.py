"""The chain: script conversion → baseline → fine-tuning → evaluation → promotion → index → report (judged).

- :mod:`~nlsim.chain.config`: :class:`~nlsim.chain.config.PipelineConfig`, the parameters of the chain;
- :mod:`~nlsim.chain.fingerprint`: what a trained model was made from (annotations, base model, settings);
- :mod:`~nlsim.chain.promotion`: scoring models on the validation split and the promotion gate;
- :mod:`~nlsim.chain.run`: :func:`~nlsim.chain.run.run_pipeline`, the one place that orders the chain.
"""
