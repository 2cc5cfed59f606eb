"""Decoder and encoder models: loading, the tiny demo suite, fine-tuning methods, FLOPs."""
