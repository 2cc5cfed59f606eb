"""Scaling analysis: runs table, scaling-law fits, compute-optimal frontier and recipe (paper 1)."""
