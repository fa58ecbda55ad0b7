"""The report of a near-duplicate run: the files editors read, the page, the run record and the summary.

- :mod:`~nlsim.report.files`: the report files (Parquet, CSV, XLSX, ``summary.md``, ``run.json``), each
  table as its column table declares it (:mod:`~nlsim.io.columns`); batch and daily publishing;
- :mod:`~nlsim.report.html`: the page (``index.html``), put together from its data
  (:mod:`~nlsim.report.page`), its prose (:mod:`~nlsim.report.prose`) and its review panel
  (:mod:`~nlsim.report.review`); :mod:`~nlsim.report.plots`: ``overview.png``;
- :mod:`~nlsim.report.spreadsheet`: ``pairs.csv``, ``members.csv`` and ``report.xlsx`` cells (text stays
  text);
- :mod:`~nlsim.report.record`: the run record (``run.json``), built once, read by the page and the summary;
- :mod:`~nlsim.report.summary`: the run's one Markdown summary (``summary.md``, the flow's artifact);
- :mod:`~nlsim.report.scores`: the score columns of a pairs frame;
- :mod:`~nlsim.report.near_misses`: the best candidate pairs below the threshold, for review.

The run (:mod:`nlsim.dedup`) writes the report; the report never reads the run.
"""
