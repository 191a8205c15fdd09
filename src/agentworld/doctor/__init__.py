"""``agentworld doctor``: is this world-model (and judge) endpoint usable, and with which flags?

Pointing agentworld at a served model fails in a handful of ways that otherwise show up only as bad
scores: a wrong key or model name, reasoning in a field nobody reads, a context shorter than the
thinking, a ``--max-tokens`` that cuts most answers before their ``</predicted_observation>``.
The doctor checks each in order on a real request per domain and prints a verdict table with the
flags to use (:mod:`agentworld.doctor.checks` runs the checks, :mod:`agentworld.doctor.report`
prints them, :mod:`agentworld.doctor.cli` is the command).
"""
