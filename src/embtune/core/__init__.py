"""The base layer: one exception type, atomic outputs and locks, the path layout, params files as data, the PND-set registry and what a stage's rerun hash covers.

Nothing here imports the rest of embtune: every other layer may import it."""
