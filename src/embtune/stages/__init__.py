"""Stage drivers: one module per ``embtune <stage>`` command, named after the stage
(``embtune prepare-xnli`` -> ``embtune/stages/prepare_xnli.py``).

Why a package of its own: library modules compute and return data; argument parsing, reading
and writing files and exit codes live here, so the library can be imported (and tested) without
an argv. Every driver has the same shape: ``main(argv) -> int``; bad input raises
:class:`embtune.core.errors.DataError`, which :mod:`embtune.cli` prints as one line and exits 2; a
traceback means a bug. ``validate-params`` and ``plan`` print a params error (which can list
several keys, one per line) and exit 2 too. No module outside this package parses arguments
or exits the process (tests/contracts/test_stage_drivers.py).
"""
