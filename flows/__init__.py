"""Prefect flows: orchestration of nlsim stages (no logic of their own).

Prefect puts this folder on ``sys.path`` when it loads a deployment's entrypoint (``flows/dedup.py:...``),
so no module here may share its name with an installed package (``dask``, ``distributed``, ``prefect``...).

Importing the package gives Prefect's temporary API server time to start on a loaded machine
(:mod:`flows.ephemeral`), before any module here imports prefect.
"""

from flows.ephemeral import give_time

give_time()
