"""Contrastive fine-tuning: losses, GradCache, the training loops and the FLOP-budgeted ``train`` stage
(their LR schedules are :mod:`embtune.core.optim`)."""
