"""Clusters: which items tell the same story, with ids that stay stable from run to run.

- :mod:`~nlsim.clusters.order`: the earliest-first order rule behind every id;
- :mod:`~nlsim.clusters.rules`: which linked items make one cluster (support inside a cluster, or connected
  components), honouring the editors' verdicts (:mod:`~nlsim.clusters.constraints`);
- :mod:`~nlsim.clusters.assign`: one membership rule for batch and daily runs (and regrouping after a
  model change);
- :mod:`~nlsim.clusters.table`: the report's clusters table and representatives.
"""
