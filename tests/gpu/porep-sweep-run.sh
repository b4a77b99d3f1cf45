#!/usr/bin/env bash
# One device call for issue 35 (a GPU machine without cargo): the streamed tier's GPU test, then
# the 32 GiB PoRep VRAM sweep (porep-full.sh with VRAM_SWEEP) under a cgroup memory.max, with a
# host budget that keeps the partitions within ~36 GiB beside the parameters and the recording.
# CHECK_EVERY sets engine.recording_check_every (default 64; 0: no periodic full check).
#   BUNDLE/porep-sweep-run.sh BUNDLE OUT [COUNT] [CONCURRENCY]     (SWEEP=16384,0 by default)
set -uo pipefail
bundle=$(cd "${1:?usage: porep-sweep-run.sh BUNDLE OUT}" && pwd)
out=${2:?usage: porep-sweep-run.sh BUNDLE OUT}
mkdir -p "$out"
export CUZK_KERNEL_CACHE=$bundle/kcache
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
free -g | head -2
if [ -x "$bundle/gpu_streamed" ] && [ -z "${SKIP_TESTS:-}" ]; then
    echo "== gpu_streamed"
    timeout 240 "$bundle/gpu_streamed" --ignored --test-threads=1 2>&1 | tail -6
fi
cat >"$out/bench.toml" <<CONF
[engine]
host_budget_mib = ${HOST_BUDGET_MIB:-36864}
recording_check_every = ${CHECK_EVERY:-64}
CONF
echo "== sweep ${SWEEP:-16384,0} count=${3:-2} j=${4:-2}"
VRAM_SWEEP=${SWEEP:-16384,0} MEMORY_MAX=${MEMORY_MAX:-100G} \
    BENCH_ARGS="--config $out/bench.toml" WARM_UP=0 \
    "$bundle/porep-full.sh" "$bundle" /tmp/porep-work "${3:-2}" "${4:-2}" >"$out/sweep.log" 2>&1
echo "sweep rc=$?"
grep -v '^proof \|^\s*$' "$out/sweep.log" | grep -v 'INFO\|DEBG' | tail -40
