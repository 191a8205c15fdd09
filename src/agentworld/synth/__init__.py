"""Synthesized and fictional environments (issue 11): worlds nobody recorded, checked before use."""
