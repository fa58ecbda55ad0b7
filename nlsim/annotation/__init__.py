"""The editors' annotation loop: draw new candidate pairs to score, then check and merge the filled file.

- :mod:`~nlsim.annotation.draw`: the candidate pairs an editor scores next (``nlsim annotate draw``): near
  the model's threshold first, the rest spread over score strata, none already annotated;
- :mod:`~nlsim.annotation.validate`: reading an editors' filled file and every reason to refuse it (scores
  off the rubric, an item's other text, a pair already annotated, a cell the pair file cannot hold), named
  by file, sheet row and field, all at once;
- :mod:`~nlsim.annotation.merge`: the merge (``nlsim annotate merge``) under the pair file's lock: new pairs
  into the pair file, verdicts and overrules into the verdict store; ``nlsim annotate verdicts``;
- :mod:`~nlsim.annotation.pair_file`: the pair file as a merge rewrites it (existing rows byte for byte),
  read back and compared before it replaces the old one.
"""

from nlsim.annotation.draw import DrawResult, draw_candidates, select_candidates
from nlsim.annotation.merge import MergeResult, check_verdicts, merge_annotations
from nlsim.annotation.validate import read_filled, validate_filled

__all__ = [
    "DrawResult",
    "MergeResult",
    "check_verdicts",
    "draw_candidates",
    "merge_annotations",
    "read_filled",
    "select_candidates",
    "validate_filled",
]
