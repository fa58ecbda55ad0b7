"""The near-duplicate pipeline: load → convert → embed → index → neighbours → rerank → cluster → report.

- :mod:`~nlsim.pipeline.config`: :class:`~nlsim.pipeline.config.DedupConfig`, the parameters of a run;
- :mod:`~nlsim.pipeline.run`: :func:`~nlsim.pipeline.run.run_dedup`, the one place that orders the stages;
- :mod:`~nlsim.pipeline.paths`: the path and calibration checks made before any work (light to import);
- :mod:`~nlsim.pipeline.stages`: the stage functions;
- :mod:`~nlsim.pipeline.window`: which items a run embeds and searches (batch, or daily against a state);
- :mod:`~nlsim.pipeline.state`, :mod:`~nlsim.io.lock`: the state folder of daily runs and its lock;
- :mod:`~nlsim.pipeline.report`, :mod:`~nlsim.pipeline.html`: the report files;
- :mod:`~nlsim.pipeline.stats`: the run record;
- :mod:`~nlsim.pipeline.sharded`: the embedding and search stages cut into shards (the Dask flow).
"""
