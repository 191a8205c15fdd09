"""Held-out hygiene: what a corpus already holds of an evaluated set; what ``--exclude-own`` leaves out."""
