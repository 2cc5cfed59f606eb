"""`embtune curves`: every run's curve as one long table per kind, the rows hand-checked."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from embtune.stages import curves


def _run(root: Path, run_id: str, rows: list[tuple[int, float, float]], method: str = "full", **metrics) -> Path:
    d = root / "runs" / run_id
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps({"run_id": run_id, "model": "m1", "method": method, "status": "ok",
                                                **metrics}))
    lines = ["step,loss,lr,tokens,flops"] + [f"{s},{loss!r},{lr!r},{s * 10},{s * 100}" for s, loss, lr in rows]
    (d / "curve.csv").write_text("\n".join(lines) + "\n")
    return d / "metrics.json"


def _qrun(root: Path, model: str, qrun: str, rows: list[dict]) -> Path:
    d = root / "query_runs" / model / qrun
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps({"qrun_id": qrun, "status": "ok"}))
    pl.DataFrame(rows).write_csv(d / "curve.csv")
    return d / "metrics.json"


def test_curves_are_one_long_table_per_kind(tmp_path: Path) -> None:
    a = _run(tmp_path, "run-a", [(1, 3.4, 1e-4), (2, 3.1, 2e-4)])
    b = _run(tmp_path, "run-b", [(1, 3.3, 5e-4)], method="lora")
    skipped = tmp_path / "runs" / "run-c"
    skipped.mkdir(parents=True)
    (skipped / "metrics.json").write_text(json.dumps({"run_id": "run-c", "status": "skipped"}))
    q = _qrun(tmp_path, "e5", "lr1e-5", [
        {"epoch": 0, "lr": None, "train_loss": None, "val_loss": 0.05, "val_errors": 40},
        {"epoch": 1, "lr": 1e-5, "train_loss": 0.06, "val_loss": 0.04, "val_errors": 31}])
    out = tmp_path / "curves"
    assert curves.main(["--metrics", str(a), str(b), str(skipped / "metrics.json"),
                        "--query-metrics", str(q), "--out", str(out)]) == 0
    loss = pl.read_csv(out / "train_loss.csv")
    assert loss.rows() == [("run-a", "m1", "ok", "full", 1, 3.4), ("run-a", "m1", "ok", "full", 2, 3.1),
                           ("run-b", "m1", "ok", "lora", 1, 3.3)]
    assert pl.read_csv(out / "lr.csv")["lr"].to_list() == [1e-4, 2e-4, 5e-4]
    val = pl.read_csv(out / "query_val_errors.csv")
    assert val.rows() == [("e5/lr1e-5", "e5", "ok", 0, 40.0), ("e5/lr1e-5", "e5", "ok", 1, 31.0)]
    # the untuned epoch has no training loss: no row, not a NaN the chart would draw as 0
    assert pl.read_csv(out / "query_train_loss.csv").rows() == [("e5/lr1e-5", "e5", "ok", 1, 0.06)]


def test_a_curve_missing_a_column_is_refused_by_name(tmp_path: Path, capsys) -> None:
    from embtune.cli import main as cli

    a = _run(tmp_path, "run-a", [(1, 3.4, 1e-4)])
    (a.parent / "curve.csv").write_text("step,loss\n1,3.4\n")
    assert cli(["curves", "--metrics", str(a), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "curve.csv" in err and "lr" in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["mteb.json", "curve.csv"])
def test_only_metrics_files_are_taken(tmp_path: Path, name: str) -> None:
    from embtune.cli import main as cli

    (tmp_path / name).write_text("{}")
    assert cli(["curves", "--metrics", str(tmp_path / name), "--out", str(tmp_path / "out")]) == 2


def test_plots_writes_the_same_tables_into_each_kinds_shared_folder(tmp_path: Path) -> None:
    a = _run(tmp_path, "run-a", [(1, 3.4, 1e-4), (2, 3.1, 2e-4)])
    other = tmp_path / "plots/train_loss/paper.csv"          # another study's file: left alone
    other.parent.mkdir(parents=True)
    other.write_text("run,step,loss\np,1,9.0\n")
    assert curves.main(["--metrics", str(a), "--out", str(tmp_path / "curves"),
                        "--plots", str(tmp_path / "plots/{kind}/demo.csv")]) == 0
    written = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "plots").rglob("*.csv"))
    assert written == ["plots/lr/demo.csv", "plots/query_train_loss/demo.csv", "plots/query_val_errors/demo.csv",
                       "plots/query_val_loss/demo.csv", "plots/train_loss/demo.csv", "plots/train_loss/paper.csv",
                       "plots/val_loss/demo.csv"]
    for kind in ("train_loss", "lr", "query_val_loss"):
        assert (tmp_path / f"plots/{kind}/demo.csv").read_bytes() == (tmp_path / f"curves/{kind}.csv").read_bytes()
    assert pl.read_csv(tmp_path / "plots/train_loss/demo.csv")["loss"].to_list() == [3.4, 3.1]
    assert other.read_text() == "run,step,loss\np,1,9.0\n"


@pytest.mark.parametrize("template", ["plots/train_loss.csv", "plots/{kind}/{run}.csv", "plots/{kind}{kind}.csv"])
def test_a_plots_template_without_exactly_one_kind_is_refused(tmp_path: Path, template: str, capsys) -> None:
    a = _run(tmp_path, "run-a", [(1, 3.4, 1e-4)])
    with pytest.raises(SystemExit) as info:
        curves.main(["--metrics", str(a), "--out", str(tmp_path / "curves"), "--plots", str(tmp_path / template)])
    assert info.value.code == 2 and "paths.plots" in capsys.readouterr().err
    assert not (tmp_path / "curves").exists()


def test_held_out_loss_is_a_point_per_run_and_a_line_per_model_and_variant(tmp_path: Path) -> None:
    """Two budgets of one (model, variant) make one line; another variant and another seed are
    lines of their own; a run without a finite held-out loss adds no point."""
    paths = [_run(tmp_path, "m1__full__c2e10__s0", [(1, 3.0, 1e-4)], val_loss=2.5, tokens=2000),
             _run(tmp_path, "m1__full__c1e10__s0", [(1, 3.1, 1e-4)], val_loss=2.8, tokens=1000),
             _run(tmp_path, "m1__full__c1e10__s1", [(1, 3.1, 1e-4)], val_loss=2.7, tokens=1000),
             _run(tmp_path, "m1__lora-r8__c1e10__s0", [(1, 3.2, 1e-4)], method="lora", val_loss=3.1, tokens=1200),
             _run(tmp_path, "m1__lora-r8__c2e10__s0", [(1, 3.2, 1e-4)], method="lora", val_loss=float("nan"), tokens=2400)]
    out = tmp_path / "curves"
    assert curves.main(["--metrics", *map(str, paths), "--out", str(out)]) == 0
    rows = pl.read_csv(out / "val_loss.csv").select("series", "run", "tokens", "val_loss").rows()
    assert rows == [("m1 full", "m1__full__c1e10__s0", 1000, 2.8), ("m1 full", "m1__full__c2e10__s0", 2000, 2.5),
                    ("m1 full s1", "m1__full__c1e10__s1", 1000, 2.7), ("m1 lora-r8", "m1__lora-r8__c1e10__s0", 1200, 3.1)]
