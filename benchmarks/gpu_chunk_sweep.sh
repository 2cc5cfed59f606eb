#!/usr/bin/env bash
# The GradCache chunk against training throughput on one GPU: params.yaml's chunk is the upper bound
# embtune.gpus lowers per run to fit the GPU class, so its value decides the speed of every run that
# fits. Pythia-410M and -1B shapes, batch 1024 pairs (2048 sequences), context 75, bf16.
# Every configuration runs in its own process, with a wall-clock cap so one slow configuration
# cannot eat the device budget; bench_train's JSON goes to $1/<name>.json.
# Measured 2026-11-28 on one H200 (benchmarks/chunk_sweep_measured.json): 410M 42k/68k/81k/75k
# tokens/s at chunk 128/256/512/1024 (sentence-transformers CachedMNRL 46k at 128, 71k at 512);
# 1B 35k/48k/42k at 128/512/2048. One pass without GradCache (bench_train --modes single) does not
# fit 139 GiB at 410M, batch 1024 (no checkpointing there). Hence params.yaml's chunk 512.
set -u
out=${1:-chunk_sweep}
mkdir -p "$out"
py=${PYTHON:-python3}
b() {  # name, then bench_train arguments
  local name=$1; shift
  echo "== $name: $*"
  timeout 150 "$py" benchmarks/bench_train.py --batch 1024 --ctx 75 --steps 3 --repeats 1 --skip-memory \
    --threads 8 --json-out "$out/$name.json" "$@" 2>&1 | grep -v Warning | tail -8
}
P410=(--hidden 1024 --layers 24 --heads 16)
P1B=(--hidden 2048 --layers 16 --heads 8)
b 410m-c128 "${P410[@]}" --chunk 128 --modes ours st
b 410m-c512 "${P410[@]}" --chunk 512 --modes ours st
b 410m-c256 "${P410[@]}" --chunk 256 --modes ours
b 410m-c1024 "${P410[@]}" --chunk 1024 --modes ours
b 1b-c128 "${P1B[@]}" --chunk 128 --modes ours
b 1b-c512 "${P1B[@]}" --chunk 512 --modes ours
b 1b-c2048 "${P1B[@]}" --chunk 2048 --modes ours
