"""Evaluation: PND on triplet sets and XNLI, significance tests, ranking metrics, embedding cache."""
