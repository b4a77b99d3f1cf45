#!/usr/bin/env bash
# A full-size PoRep C2 on one GPU machine without cargo (issue 17): a synthetic C1 output of
# SECTOR (default 32GiB), cuzk's seeded parameters set up on GPU 0 straight into the engine (no
# 47 GB file) while the partition circuit is recorded from its blank circuit beside it, then
# `cuzk bench porep`: WARM_UP proofs (default 0), one proof alone, and COUNT proofs with
# CONCURRENCY in flight, each accepted by verify_seal.
# Host memory in use and the GPU's memory in use are sampled every second into WORK/memory.log;
# the last lines give their peaks.
#   VRAM_SWEEP=16384,24576,32768,0  runs it all once per VRAM budget (MiB; 0 = the whole card) in
#                                   one process, the parameters set up once (`--vram-sweep`);
#   MEMORY_MAX=100G                 runs the bench in a cgroup v2 with that `memory.max` (the
#                                   kernel kills the process if it goes over: the run shows that
#                                   it did not); its memory.events are printed at the end;
#   BENCH_ARGS="..."                more `cuzk bench porep` arguments.
#   tests/gpu/porep-full.sh BUNDLE WORK [COUNT] [CONCURRENCY]
set -euo pipefail
bundle=$(cd "${1:?usage: porep-full.sh BUNDLE WORK [COUNT] [CONCURRENCY]}" && pwd)
work=${2:?usage: porep-full.sh BUNDLE WORK [COUNT] [CONCURRENCY]}
count=${3:-2}
concurrency=${4:-2}
sector=${SECTOR:-32GiB}
mkdir -p "$work"
export CUZK_KERNEL_CACHE=${CUZK_KERNEL_CACHE:-$bundle/kcache}
"$bundle/cuzk" kernels build >/dev/null

# `epoch host_used_mib gpu_used_mib`, every second, until this script ends.
(
    while :; do
        gpu=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)
        host=$(free -m | awk '/^Mem:/ {print $3}')
        echo "$(date +%s) ${host:-?} ${gpu:-?}"
        sleep 1
    done
) >"$work/memory.log" &
sampler=$!
trap 'kill $sampler 2>/dev/null || true' EXIT

start=$(date +%s%N)
"$bundle/cuzk" filecoin synth-c1 --sector-size "$sector" --seed 1 --out "$work/c1.json" | tee "$work/synth-c1.log"
echo "synth_c1_s=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')"
read -r -a ids <<<"$(grep -o -- '--prover-id [0-9a-f]* --sector-id [0-9]*' "$work/synth-c1.log" | head -1)"
sweep=()
[ -n "${VRAM_SWEEP:-}" ] && sweep=(--vram-sweep "$VRAM_SWEEP")
read -r -a extra <<<"${BENCH_ARGS:-}"
bench=("$bundle/cuzk" bench porep --c1 "$work/c1.json" "${ids[@]}" --params-dir "$work/params"
    --setup-into-engine --setup-gpu 0 --warm-up "${WARM_UP:-0}" -c "$count" -j "$concurrency"
    --timeline-dir "$work/timeline" "${sweep[@]}" "${extra[@]}")
if [ -n "${MEMORY_MAX:-}" ]; then
    cg=/sys/fs/cgroup/cuzk-porep-$$
    mkdir "$cg"
    echo "$MEMORY_MAX" >"$cg/memory.max"
    echo 0 >"$cg/memory.swap.max" 2>/dev/null || true
    echo "# cgroup $cg memory.max=$(cat "$cg/memory.max")"
    rc=0
    bash -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' _ "$cg" "${bench[@]}" || rc=$?
    echo "cgroup memory.peak=$(cat "$cg/memory.peak" 2>/dev/null || echo ?) $(tr '\n' ' ' <"$cg/memory.events")"
    rmdir "$cg" 2>/dev/null || true
    [ "$rc" -eq 0 ] || { echo "bench porep exited $rc"; exit "$rc"; }
else
    "${bench[@]}"
fi
awk 'BEGIN { h = 0; g = 0 } $2 > h { h = $2 } $3 > g { g = $3 } END { printf "memory_peaks host_used_mib=%d gpu_used_mib=%d\n", h, g }' "$work/memory.log"
