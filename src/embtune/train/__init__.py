"""Contrastive fine-tuning: losses, GradCache, LR schedule and the FLOP-budgeted ``train`` stage."""
