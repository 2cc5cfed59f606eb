"""embtune: compute-optimal contrastive fine-tuning of decoder LMs into text embedders,
and adiabatic query-encoder tuning.

The library is a set of pure functions grouped one concept per module; file I/O lives in the
thin ``main(argv)`` wrappers that the ``embtune`` CLI dispatches to and Snakemake rules call.
"""

__version__ = "0.1.0"
