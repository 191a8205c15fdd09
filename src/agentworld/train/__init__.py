"""Training recipes: CPT with loss masks, SFT with reasoning traces and rejection sampling, GSPO, Sim RL."""
