"""``embtune link-outputs`` (evaluate_mteb's job): one run's outputs hard-linked out of its batch
folder, files and folders, the commit marker last; a missing one is bad input (exit 2)."""

from __future__ import annotations

import os
from pathlib import Path

from embtune.cli import main


def _batch(tmp_path: Path) -> Path:
    src = tmp_path / "batch" / "run-a"
    (src / "mteb_results" / "task").mkdir(parents=True)
    (src / "mteb_results" / "task" / "scores.json").write_text('{"main_score": 0.5}')
    (src / "mteb.parquet").write_bytes(b"PAR1")
    (src / "mteb.json").write_text('{"average": 0.5}')
    return src


def test_outputs_are_hard_links_of_the_batch_files(tmp_path: Path) -> None:
    src = _batch(tmp_path)
    out = tmp_path / "runs" / "run-a"
    out.mkdir(parents=True)
    outs = [out / "mteb.parquet", out / "mteb_results", out / "mteb.json"]
    assert main(["link-outputs", "--src", str(src), "--out", *map(str, outs)]) == 0
    assert os.path.samefile(out / "mteb.json", src / "mteb.json")
    assert os.path.samefile(out / "mteb_results/task/scores.json", src / "mteb_results/task/scores.json")


def test_a_missing_batch_output_is_bad_input(tmp_path: Path, capsys) -> None:
    src = _batch(tmp_path)
    (src / "mteb.parquet").unlink()
    out = tmp_path / "runs" / "run-a"
    out.mkdir(parents=True)
    rc = main(["link-outputs", "--src", str(src), "--out", str(out / "mteb.parquet"), str(out / "mteb.json")])
    err = capsys.readouterr().err
    assert rc == 2 and "mteb.parquet: missing" in err and "Traceback" not in err
    assert not (out / "mteb.json").exists()


def test_snakemakes_timestamp_is_never_shared(tmp_path: Path) -> None:
    """A linked folder gets no hard link of Snakemake's ``.snakemake_timestamp``: Snakemake dates a
    directory output by that file and touches it when the job ends, and a shared inode would date
    the source folder too (its readers would re-plan)."""
    src = _batch(tmp_path)
    (src / "mteb_results" / ".snakemake_timestamp").write_text("")
    os.utime(src / "mteb_results" / ".snakemake_timestamp", (1_000_000, 1_000_000))
    out = tmp_path / "runs" / "run-a"
    out.mkdir(parents=True)
    assert main(["link-outputs", "--src", str(src), "--out", str(out / "mteb_results")]) == 0
    assert not (out / "mteb_results" / ".snakemake_timestamp").exists()
    assert os.path.samefile(out / "mteb_results/task/scores.json", src / "mteb_results/task/scores.json")
