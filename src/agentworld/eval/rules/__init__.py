"""The rule tier: judge-free scores of a prediction against the real observation, and what holds them honest.

``scores`` (exact match, line F1, content tiers, structure), ``baselines`` (trivial predictors and
skill), ``context`` (a rule score beside its baselines and its rubric calibration), ``contract`` (the
contract every domain's rules meet on real recordings) and ``corruptions`` (wrong observations they
must reject).
"""
