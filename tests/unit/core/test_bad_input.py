"""Bad input, stage by stage: every error names the file (and the line or row), says what was
expected, leaves no complete-looking output behind, and reaches the command line as one line
``embtune <stage>: error: ...`` with exit status 2 (no traceback).

The broken inputs are built here from good ones: a gzip cut mid-stream or with damaged deflate
data or checksum, invalid UTF-8 written at a known line, parquet files with flipped footer bytes,
truncated safetensors, NaN weights, NaN metrics. Expected lines and byte offsets are computed in
the test from the bytes it wrote, not taken from the code under test.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import polars as pl
import pytest
from helpers_train import make_base_model, make_shards, one_thread, run_config, with_train

from embtune.cli import main as cli_main
from embtune.core.errors import DataError

_one_thread = pytest.fixture(autouse=True)(one_thread)
LONG = "and the answer is in this part of the text " * 35  # long lines: a text wrapper's 8 KiB decode buffer spans several of them
ENGLISH = "This is the answer to the question, and it is written in plain English for the test."


# --------------------------------------------------------------------------- input builders
def bge_line(i: int) -> str:
    return json.dumps({"query": f"what is the question number {i} about {LONG}",
                       "pos": [f"{ENGLISH} Case {i}."], "neg": ["Nothing."]})


def msmarco_line(i: int) -> str:
    return json.dumps({"query": f"query {i} {LONG}", "pos": [f"passage {i}"], "neg": [f"negative {i}"]})


def arxiv_line(i: int) -> str:
    return json.dumps({"id": f"0704.{i:04d}", "title": f"Title {i}", "categories": "math.CO",
                       "abstract": f"We study problem {i}. {LONG}"})


LINES: dict[str, Callable[[int], str]] = {"bge": bge_line, "msmarco": msmarco_line, "arxiv": arxiv_line}


def run_reader_stage(loader: str, src: Path, out: Path, tok: Path) -> int:
    """The stage that reads ``src`` (a JSONL(.gz) file), through the ``embtune`` command."""
    if loader == "bge":
        return cli_main(["prepare-bge", "--files", str(src), "--tokenizer", str(tok), "--context-length", "16",
                         "--val-pairs", "2", "--shard-rows", "8", "--seed", "0", "--out", str(out)])
    if loader == "msmarco":
        return cli_main(["split-msmarco", "--file", str(src), "--train-size", "10", "--val-size", "5",
                         "--eval-size", "5", "--hard-negatives", "1", "--out", str(out)])
    return cli_main(["build-arxiv-negatives", "--snapshot", str(src), "--n-negatives", "2",
                     "--levels", "1", "--narrow-domains", "--out", str(out)])


def assert_stage_error(loader: str, rc: int, err: str) -> str:
    """One line on stderr, no traceback; exit status 2. (build-arxiv-negatives catches its own
    DataError and returns 1: its module belongs to another change, see the report.)"""
    assert rc == 2
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(lines) == 1, err
    return lines[0]


def gzip_bytes(text: bytes) -> bytes:
    return gzip.compress(text, compresslevel=6, mtime=0)


def corrupt_gzip(data: bytes, how: str) -> bytes:
    """``truncated``: cut in the middle of the deflate stream; ``deflate``: overwrite a run of
    compressed bytes in the middle (they may inflate to garbage that only the checksum exposes);
    ``blocktype``: make the first deflate block use the reserved block type 3 (zlib rejects it at
    once); ``crc``: flip a bit of the CRC-32 trailer."""
    if how == "truncated":
        return data[:len(data) // 2]
    if how == "blocktype":  # byte 10 starts the deflate data: bit 0 BFINAL, bits 1-2 BTYPE
        return data[:10] + bytes([data[10] | 0b110]) + data[11:]
    if how == "deflate":
        mid = len(data) // 2
        return data[:mid] + b"\xff" * 64 + data[mid + 64:]
    assert how == "crc"
    return data[:-8] + bytes([data[-8] ^ 1]) + data[-7:]


# --------------------------------------------------------------------------- gzip streams
@pytest.mark.parametrize("how", ["truncated", "deflate", "blocktype", "crc"])
@pytest.mark.parametrize("loader", ["bge", "msmarco", "arxiv"])
def test_corrupt_gzip_names_the_file_and_how_far_it_read(tmp_path, tokenizer_dir, capsys, loader, how):
    text = "".join(LINES[loader](i) + "\n" for i in range(60)).encode()
    src = tmp_path / "input.jsonl.gz"
    src.write_bytes(corrupt_gzip(gzip_bytes(text), how))
    # the first line whose bytes the damaged stream cannot deliver in full (an upper bound on
    # the lines read correctly): decompress what zlib accepts, independently of embtune
    got = _decompress_prefix(src.read_bytes())
    complete_lines = got.count(b"\n")
    rc = run_reader_stage(loader, src, tmp_path / "out", tokenizer_dir)
    msg = assert_stage_error(loader, rc, capsys.readouterr().err)
    assert str(src) in msg and "corrupt or truncated gzip stream" in msg
    assert "expected a complete gzip file" in msg
    if "up to line " in msg:       # zlib rejected the stream: how far it was read correctly
        read_up_to = int(msg.split("up to line ")[1].split()[0])
        assert read_up_to <= complete_lines and (how != "crc" or read_up_to == 60)
        assert how != "blocktype" or ("invalid block type" in msg and read_up_to == 0)
    else:                          # damaged data inflated to garbage: where it shows, and why
        assert how == "deflate" and "the damage shows first at line " in msg
        first = int(msg.split("first at line ")[1].split()[0])
        assert first <= complete_lines + 1 and ("invalid JSON" in msg or "invalid UTF-8" in msg)
    assert not (tmp_path / "out").exists()


def _decompress_prefix(data: bytes) -> bytes:
    """What raw inflation (no checksum test) of the deflate data after the 10-byte gzip header
    yields before zlib rejects the stream, fed one byte at a time so nothing decoded is lost."""
    import zlib

    d = zlib.decompressobj(wbits=-15)
    out = []
    for i in range(10, len(data)):
        try:
            out.append(d.decompress(data[i:i + 1]))
        except zlib.error:
            break
    return b"".join(out)


def test_corrupt_gzip_keeps_the_previous_complete_output(tmp_path, tokenizer_dir, capsys):
    good = tmp_path / "good.jsonl"
    good.write_text("".join(bge_line(i) + "\n" for i in range(20)))
    out = tmp_path / "out"
    assert run_reader_stage("bge", good, out, tokenizer_dir) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(corrupt_gzip(gzip_bytes(good.read_bytes() * 3), "truncated"))
    assert run_reader_stage("bge", bad, out, tokenizer_dir) == 2
    assert str(bad) in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") and p.is_dir()]  # no temp dirs left


# --------------------------------------------------------------------------- invalid UTF-8
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("loader", ["bge", "msmarco", "arxiv"])
def test_invalid_utf8_is_reported_at_its_line_and_byte(tmp_path, tokenizer_dir, capsys, loader, compress):
    k, col = 37, 25                       # 1-based line and 0-based byte column of the bad byte
    lines = [(LINES[loader](i) + "\n").encode() for i in range(60)]
    lines[k - 1] = lines[k - 1][:col] + b"\xff" + lines[k - 1][col:]
    text = b"".join(lines)
    offset = sum(len(x) for x in lines[:k - 1]) + col
    assert text[offset] == 0xFF and text[:offset].count(b"\n") == k - 1
    src = tmp_path / ("input.jsonl.gz" if compress else "input.jsonl")
    src.write_bytes(gzip_bytes(text) if compress else text)
    rc = run_reader_stage(loader, src, tmp_path / "out", tokenizer_dir)
    msg = assert_stage_error(loader, rc, capsys.readouterr().err)
    assert f"{src}:{k}: invalid UTF-8 byte 0xff at column {col + 1} " in msg   # ASCII before it
    assert f"byte offset {offset})" in msg and "expected UTF-8 text" in msg
    assert not (tmp_path / "out").exists()


def test_open_text_reads_like_a_text_file(tmp_path):
    """The checked reader gives what ``open(..., encoding='utf-8')`` gives (lines, read(n),
    read()), with ``\\r\\n`` read as ``\\n``, for plain and gzip files."""
    from embtune.data.jsonl import open_text

    text = "".join(f"line {i} é {'x' * (i * 37 % 500)}\r\n" for i in range(200))
    plain, gz = tmp_path / "a.txt", tmp_path / "a.txt.gz"
    plain.write_bytes(text.encode())
    gz.write_bytes(gzip_bytes(text.encode()))
    want = text.replace("\r\n", "\n")
    for path in (plain, gz):
        with open_text(path) as fh:
            assert list(fh) == want.splitlines(keepends=True)
        with open_text(path) as fh:
            head = fh.read(1000)
            assert head == want[:1000] and fh.read() == want[1000:] and fh.read() == ""


# --------------------------------------------------------------------------- parquet
def flip_footer(path: Path) -> None:
    """XOR the bytes of the thrift footer (file metadata) just before its length and ``PAR1``."""
    data = bytearray(path.read_bytes())
    n = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - n
    for i in range(start, start + min(n, 64)):
        data[i] ^= 0xA5
    path.write_bytes(bytes(data))


def truncate_half(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


CORRUPT = {"footer": flip_footer, "truncated": truncate_half}


@pytest.mark.parametrize("how", list(CORRUPT))
def test_corrupt_xnli_parquet(tmp_path, capsys, how):
    src = tmp_path / "src"
    for lang in ("en", "de"):
        path = src / lang / "test-00000-of-00001.parquet"
        path.parent.mkdir(parents=True)
        pl.DataFrame({"premise": ["a", "b"], "hypothesis": ["c", "d"], "label": [0, 2]}).write_parquet(path)
    bad = src / "de" / "test-00000-of-00001.parquet"
    CORRUPT[how](bad)
    out = tmp_path / "xnli" / "test.parquet"
    rc = cli_main(["prepare-xnli", "--source", str(src), "--languages", "en", "de", "--out", str(out)])
    msg = assert_stage_error("xnli", rc, capsys.readouterr().err)
    assert f"{bad}: not a readable parquet file" in msg
    assert "expected the XNLI de table (columns premise, hypothesis, label)" in msg
    assert not out.exists() and not (out.parent / "manifest.json").exists()


@pytest.mark.parametrize("how", list(CORRUPT))
@pytest.mark.parametrize("shard", ["train-00001.parquet", "val.parquet"])
def test_corrupt_bge_shard_for_pack_pairs_and_train(tmp_path, capsys, shard, how):
    from embtune.train.pairs import open_pairs

    data = make_shards(tmp_path / "bge", 30, 4, 300, 12, shard_rows=10)
    CORRUPT[how](data / shard)
    rc = cli_main(["pack-pairs", "--bge-dir", str(data), "--out", str(tmp_path / "packed")])
    msg = assert_stage_error("pack", rc, capsys.readouterr().err)
    assert f"{data / shard}: cannot read column" in msg and "expected a prepare-bge shard" in msg
    assert not (tmp_path / "packed").exists()
    split = "val" if shard == "val.parquet" else "train"
    with pytest.raises(DataError, match=f"{data / shard}: cannot read column"):  # train reads shards too
        open_pairs(data, split, 12)


def test_corrupt_packed_array_names_its_file(tmp_path):
    from embtune.train.pairs import open_pairs, pack_pairs

    pack_pairs(make_shards(tmp_path / "bge", 20, 4, 300, 12), tmp_path / "packed")
    target = tmp_path / "packed" / "train" / "pos_tokens.npy"
    truncate_half(target)
    with pytest.raises(DataError, match=r"packed/train: cannot read pos_tokens\.npy.*expected the arrays pack-pairs writes"):
        open_pairs(tmp_path / "packed", "train", 12)


def test_missing_val_parquet_is_an_error_not_zero_pairs(tmp_path, capsys):
    from embtune.train.pairs import open_pairs

    data = make_shards(tmp_path / "bge", 20, 4, 300, 12)
    (data / "val.parquet").unlink()
    rc = cli_main(["pack-pairs", "--bge-dir", str(data), "--out", str(tmp_path / "packed")])
    msg = assert_stage_error("pack", rc, capsys.readouterr().err)
    assert f"{data / 'val.parquet'}: file not found; expected the validation pairs" in msg
    assert not (tmp_path / "packed").exists()
    with pytest.raises(DataError, match="val.parquet: file not found"):
        open_pairs(data, "val", 12)


# --------------------------------------------------------------------------- trained models
def copy_dir(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def lora_dir(model_dir: Path, dst: Path) -> Path:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModel

    lora = get_peft_model(AutoModel.from_pretrained(model_dir), LoraConfig(r=2, target_modules="all-linear"))
    lora.save_pretrained(dst)
    return dst


def evaluate_mteb(model: Path, out: Path) -> int:
    return cli_main(["evaluate-mteb", "--model-dir", str(model), "--tasks", "STS15", "--data-dir",
                     str(out.parent / "no-data"), "--device", "cpu", "--out", str(out)])


@pytest.mark.parametrize("how", ["truncated", "header", "empty"])
@pytest.mark.parametrize("kind", ["full", "lora", "sentence-transformers"])
def test_corrupt_safetensors_in_a_run_dir(tmp_path, capsys, model_dir, kind, how):
    run = tmp_path / "run"
    run.mkdir()
    model = (lora_dir(model_dir, run / "trained") if kind == "lora" else copy_dir(model_dir, run / "trained"))
    weights = model / ("adapter_model.safetensors" if kind == "lora" else "model.safetensors")
    data = weights.read_bytes()
    weights.write_bytes({"truncated": data[:len(data) // 2], "header": data[:8] + b"#" * 16 + data[24:],
                         "empty": b""}[how])
    out = run / "mteb.json"
    if kind == "sentence-transformers":      # evaluate-pnd and tune-query load encoders this way
        from embtune.models.encoders import SentenceTransformerEncoder

        with pytest.raises(DataError) as info:
            SentenceTransformerEncoder(str(model), device="cpu")
        msg = str(info.value)
    else:
        msg = assert_stage_error("mteb", evaluate_mteb(model, out), capsys.readouterr().err)
    assert f"{weights}: corrupt or truncated safetensors file" in msg
    assert "expected the complete weights a finished training run saves" in msg
    assert not out.exists() and not out.with_suffix(".parquet").exists()


def test_nan_weights_are_refused_before_mteb(tmp_path, capsys, model_dir):
    import torch
    from safetensors.torch import load_file, save_file

    model = copy_dir(model_dir, tmp_path / "run-7" / "trained")
    weights = load_file(model / "model.safetensors")
    name = sorted(k for k in weights if k.endswith("dense_h_to_4h.weight"))[0]
    weights[name].view(-1)[[3, 5, 8]] = torch.tensor([math.nan, math.inf, math.nan])
    save_file(weights, model / "model.safetensors", metadata={"format": "pt"})
    out = tmp_path / "run-7" / "mteb.json"
    msg = assert_stage_error("mteb", evaluate_mteb(model, out), capsys.readouterr().err)
    assert f"run {tmp_path / 'run-7'}:" in msg and "hold NaN/inf" in msg
    assert f"{name.removeprefix('gpt_neox.')}: 3 of {weights[name].numel()} values" in msg
    assert "expected finite weights" in msg and "peak_lr" in msg
    assert not out.exists() and not out.with_suffix(".parquet").exists()


# --------------------------------------------------------------------------- filters drop all
def test_bge_file_whose_every_row_is_dropped_shows_the_reasons(tmp_path, tokenizer_dir, capsys):
    rows = {1: {"query": "q"}, 2: {"pos": ["p"]}, 3: {"query": "q", "pos": []},
            4: {"query": "   ", "pos": ["p"]}, 7: {"query": "q", "pos": []}}
    rows[5] = {"query": "Dies ist eine Frage auf Deutsch über das Wetter und die Zeit",
               "pos": ["Das Wetter ist heute schön, und die Sonne scheint über der Stadt."]}
    rows[6] = dict(rows[5])
    src = tmp_path / "all-bad.jsonl"
    src.write_text("".join(json.dumps(rows[i]) + "\n" for i in sorted(rows)))
    want = {"missing field 'pos'": [1], "missing field 'query'": [2], "'pos' is empty": [3, 7],
            "empty query": [4], "not English": [5, 6]}
    rc = run_reader_stage("bge", src, tmp_path / "out", tokenizer_dir)
    msg = assert_stage_error("bge", rc, capsys.readouterr().err)
    assert f"all {len(rows)} records dropped" in msg and "expected JSON objects" in msg
    for reason, line_nos in want.items():
        examples = ", ".join(f"{src}:{n}" for n in line_nos)
        assert f"{reason}: {len(line_nos)} (e.g. {examples})" in msg, reason
    assert not (tmp_path / "out").exists()

    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n \n\n")
    msg = assert_stage_error("bge", run_reader_stage("bge", blank, tmp_path / "out", tokenizer_dir),
                             capsys.readouterr().err)
    assert f"{blank}: no records (every line blank)" in msg and not (tmp_path / "out").exists()

    # some pairs survive but fewer than --val-pairs 2 + one training pair: the drops are shown too
    few = tmp_path / "few.jsonl"
    few.write_text(bge_line(0) + "\n" + json.dumps(rows[3]) + "\n")
    msg = assert_stage_error("bge", run_reader_stage("bge", few, tmp_path / "out", tokenizer_dir),
                             capsys.readouterr().err)
    assert "only 1 pairs left after filtering" in msg and f"'pos' is empty: 1 (e.g. {few}:2)" in msg
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- runs and fits
def _run_dir(root: Path, run_id: str, loss: float, budget: float) -> None:
    d = root / run_id
    d.mkdir(parents=True)
    metrics = {"status": "ok", "method": "full", "model": "tiny", "budget": budget, "peak_lr": 1e-3,
               "final_train_loss": loss, "val_loss": 1.0, "flops": budget, "tokens": 1e6, "steps": 10,
               "n_total": 1e6, "n_forward": 1e6, "n_backward": 1e6, "n_update": 1e6}
    (d / "metrics.json").write_text(json.dumps(metrics))   # json writes NaN/Infinity literally
    (d / "manifest.json").write_text(json.dumps({"run": {"method": "full", "seed": 0}}))


def test_nonfinite_metrics_of_finished_runs_are_counted_and_reported(tmp_path, capsys):
    from embtune.scaling.synthetic import synthetic_runs

    runs = tmp_path / "runs"
    _run_dir(runs, "tiny__full__c1e12__s0", 2.0, 1e12)
    _run_dir(runs, "tiny__full__c2e12__s0", math.nan, 2e12)
    _run_dir(runs, "tiny__full__c4e12__s0", math.inf, 4e12)
    table_path = tmp_path / "runs.parquet"
    assert cli_main(["collect-runs", "--runs-dir", str(runs), "--out", str(table_path)]) == 0
    err = capsys.readouterr().err
    assert "2 finished run(s) recorded NaN/inf metrics" in err
    assert "tiny__full__c2e12__s0 (final_train_loss)" in err and "tiny__full__c4e12__s0" in err
    table = pl.read_parquet(table_path).sort("run_id")
    assert table["nonfinite"].to_list() == [None, "final_train_loss", "final_train_loss"]
    assert table["final_train_loss"].to_list() == [2.0, None, None]
    manifest = json.loads((tmp_path / "runs.manifest.json").read_text())
    assert manifest["nonfinite_runs"]["count"] == 2

    # the fit stage leaves these runs out and says so in fits.json and on stdout
    demo = synthetic_runs(models=[("tiny-d128-l2", 128, 2), ("tiny-d128-l4", 128, 4)], budgets=[2e11])
    pl.concat([demo, table], how="diagonal_relaxed").write_parquet(table_path)
    out = tmp_path / "fits.json"
    assert cli_main(["fit-scaling", "--runs", str(table_path), "--bootstrap", "0", "--out", str(out)]) == 0
    assert "left out 2 finished run(s)" in capsys.readouterr().out
    dropped = json.loads(out.read_text())["dropped_nonfinite"]
    assert dropped["count"] == 2
    assert [r["run_id"] for r in dropped["runs"]] == ["tiny__full__c2e12__s0", "tiny__full__c4e12__s0"]


def test_unreadable_metrics_json_names_file_and_line(tmp_path, capsys):
    runs = tmp_path / "runs"
    _run_dir(runs, "tiny__full__c1e12__s0", 2.0, 1e12)
    (runs / "tiny__full__c1e12__s0" / "metrics.json").write_text('{\n  "status": "ok",\n  "loss": 1.0,,\n}\n')
    out = tmp_path / "runs.parquet"
    msg = assert_stage_error("collect", cli_main(["collect-runs", "--runs-dir", str(runs), "--out", str(out)]),
                             capsys.readouterr().err)
    assert f"{runs / 'tiny__full__c1e12__s0' / 'metrics.json'}:3: invalid JSON" in msg
    assert not out.exists()


# --------------------------------------------------------------------------- training
def test_nan_loss_lists_the_causes_with_this_runs_values(tmp_path):
    from embtune.train import loop

    base = make_base_model(tmp_path)
    data = make_shards(tmp_path / "bge", 64, 10, 190, 12)
    # temperature 0 is refused where a run config is read (embtune.core.ranges); set past that check,
    # it still shows how the loop names the causes of a NaN loss
    run = with_train(run_config(base, data, "full", budget=1.5e9), temperature=0.0)
    with pytest.raises(FloatingPointError) as info:
        loop.train_run(run, tmp_path / "ck")
    msg = str(info.value)
    assert f"run {run.run_id}: loss is nan at step 1" in msg
    assert f"peak_lr {run.peak_lr:.3g}" in msg                   # learning rate
    assert "fp16/bf16 overflow" in msg and "no mixed precision" in msg     # CPU run: fp32
    assert f"0 empty queries and 0 empty positives; check {data}" in msg   # the data
    assert "train.temperature 0" in msg                                    # temperature
    assert not (tmp_path / "ck" / loop.STATE_FILE).exists()


def test_empty_texts_are_counted_in_the_batch():
    from embtune.train.callbacks import empty_texts
    from embtune.train.pairs import Pairs

    pairs = Pairs.from_lists([[1], [], [2, 3], []], [[4], [5], [], [6]], 8)
    assert empty_texts(pairs, np.array([0, 1, 2])) == {"query": 1, "pos": 1}
    assert empty_texts(pairs, np.array([1, 3])) == {"query": 2, "pos": 0}
