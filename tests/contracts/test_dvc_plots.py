"""dvc.yaml's `plots:` against what the workflow writes: each entry is the folder of one curve
kind that every study shares (``paths.plots``), charted on the columns `embtune curves` writes,
and every study dvc.yaml can run writes its own file there, so no two studies share one and a
workspace where any study ran holds every folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from embtune.core.layout import Layout, plot_files
from embtune.plan.config import load_params
from embtune.scaling.curves import HELD_OUT_KIND, QUERY_KINDS, TRAIN_KINDS

KINDS = [*TRAIN_KINDS, *QUERY_KINDS, *HELD_OUT_KIND]

REPO = Path(__file__).resolve().parents[2]
DVC = yaml.safe_load((REPO / "dvc.yaml").read_text())
# every preset stack dvc.yaml runs, and CI's (presets/ci.yaml, results/ci beside the demo)
PRESETS = next(v["presets"] for v in DVC["vars"] if "presets" in v)
STACKS = {name: item["files"].split() for name, item in PRESETS.items()}
STACKS["ci"] = ["params.yaml", "presets/demo.yaml", "presets/ci.yaml"]


def _folders() -> dict[str, dict]:
    return {next(iter(p)): next(iter(p.values())) for p in DVC["plots"]}


def test_every_plot_is_a_curve_kinds_folder_drawn_on_the_columns_the_curves_stage_writes() -> None:
    folders = _folders()
    assert set(folders) == {f"results/plots/{kind}" for kind in KINDS}
    for kinds, template in ((TRAIN_KINDS, "overlay"), (QUERY_KINDS, "overlay"), (HELD_OUT_KIND, "series")):
        for kind, (column, x) in kinds.items():
            props = folders[f"results/plots/{kind}"]
            assert (props["template"], props["x"], props["y"]) == (template, x, column), kind
            assert props["title"]
            assert (REPO / ".dvc" / "plots" / f"{template}.json").is_file(), template


@pytest.mark.parametrize("study", sorted(STACKS))
def test_each_study_writes_its_own_file_into_every_folder(study: str) -> None:
    layout = Layout.from_paths(load_params([REPO / f for f in STACKS[study]])["paths"])
    files = plot_files(layout.plots, KINDS)
    assert {kind: str(path) for kind, path in files.items()} == {kind: f"results/plots/{kind}/{study}.csv" for kind in KINDS}
