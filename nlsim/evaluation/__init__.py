"""Evaluation: how well a model (or a report) agrees with the annotated pairs.

- :mod:`~nlsim.evaluation.metrics`: Spearman, Pearson, MSE, MAE of a scorer on graded pairs;
- :mod:`~nlsim.evaluation.calibration`: the threshold that best separates pairs at a relatedness level;
- :mod:`~nlsim.evaluation.judge`: a written report's same-story precision and recall against scored pairs;
- :mod:`~nlsim.evaluation.baselines`: unsupervised baselines (character TF-IDF, USE);
- :mod:`~nlsim.evaluation.sts`: the STS Benchmark files.
"""
