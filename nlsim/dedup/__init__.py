"""The near-duplicate pipeline: load → convert → embed → index → neighbours → rerank → cluster → report.

- :mod:`~nlsim.dedup.config`: :class:`~nlsim.dedup.config.DedupConfig`, the parameters of a run, made of
  the records of :mod:`~nlsim.dedup.settings` (one per concern, each setting declared once);
- :mod:`~nlsim.dedup.run`: :func:`~nlsim.dedup.run.run_dedup`, the one place that orders the stages;
- :mod:`~nlsim.dedup.paths`: the path and calibration checks made before any work (light to import);
- :mod:`~nlsim.dedup.stages`: the stage functions;
- :mod:`~nlsim.dedup.window`: which items a run embeds and searches (batch, or daily against a state);
- :mod:`~nlsim.dedup.state`, :mod:`~nlsim.io.lock`: the state folder of daily runs and its lock;
- :mod:`~nlsim.dedup.sharded`: the embedding and search stages cut into shards (the Dask flow).

The report a run writes (its files, the page, the run record, the summary) is :mod:`nlsim.report`.
"""
