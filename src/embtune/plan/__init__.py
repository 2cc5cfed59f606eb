"""Params, the training grid and what it costs before anything runs (stage ``plan``).

Above ``train/`` (the grid builds typed run configs) and below ``evaluate/``."""
