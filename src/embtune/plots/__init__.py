"""Figures and the analysis report (paper 1 Figs 1-6, 11-19; paper 2 heatmaps and LR sweeps)."""
