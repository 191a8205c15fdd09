"""Evaluation: infer, judge (rubric / Turing / reference), rule tier, score and report."""
