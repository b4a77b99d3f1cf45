#!/usr/bin/env bash
# The other-tenant test on a GPU machine (issue 16): a large job proves through the engine while
# another process (`cuzk bench tenant`) takes most of the device's memory mid-run, then gives it
# back. Passes when the bench's every proof is answered and verified (self-verification on) and
# the tenant held its memory; prints what the engine logged about the memory others took.
#   tests/gpu/other-tenant.sh DIR OUT      (DIR: a `make gpu-bundle` directory with `cuzk`)
# Environment: SIZE (log2 domain, default 24), PHASES (the tenant's LEAVE_MIB:SECONDS list,
# default 8192:20,2048:12), JOBS (default 4), PARTITIONS (default 4), RESIDENCY (default host).
set -euo pipefail
dir=${1:?usage: other-tenant.sh DIR OUT}
out=${2:?usage: other-tenant.sh DIR OUT}
cuzk=$dir/cuzk
size=${SIZE:-24}
phases=${PHASES:-8192:20,2048:12}
mkdir -p "$out"
export CUZK_PARAMS_DIR=${CUZK_PARAMS_DIR:-$out/params}
[ -d "$dir/kcache" ] && export CUZK_KERNEL_CACHE=${CUZK_KERNEL_CACHE:-$dir/kcache}
mkdir -p "$CUZK_PARAMS_DIR"
params=$CUZK_PARAMS_DIR/mulchain-$size.params
if [ ! -f "$params" ]; then
    s=$(date +%s%N)
    "$cuzk" srs generate --circuit mulchain --size "$size" --gpu 0 --out "$params" >"$out/tenant-setup.log" 2>&1
    echo "parameters mulchain 2^$size generated on GPU 0 in $(( ($(date +%s%N) - s) / 1000000 )) ms ($(stat -c %s "$params") bytes)"
fi
CUZK_LOG__LEVEL=info "$cuzk" bench batch --backend cuda -c "${JOBS:-4}" -j 1 -p "${PARTITIONS:-4}" \
    --size "$size" --srs-residency "${RESIDENCY:-host}" >"$out/tenant-bench.log" 2>"$out/tenant-bench.err" &
bench=$!
# The engine has started (its budget sampled the device) once the bench prints its header.
until grep -q '^# backend=' "$out/tenant-bench.log" 2>/dev/null; do
    kill -0 $bench 2>/dev/null || { cat "$out/tenant-bench.err" | tail -20; echo "bench ended before it started"; exit 1; }
    sleep 0.2
done
"$cuzk" bench tenant --gpu 0 --phases "$phases" >"$out/tenant.log" 2>&1 &
tenant=$!
rc_bench=0; wait $bench || rc_bench=$?
rc_tenant=0; wait $tenant || rc_tenant=$?
echo "--- tenant"; cat "$out/tenant.log"
echo "--- engine lines about device memory"
grep -E 'other processes|device memory freed|chunked tier|out of memory|failed' "$out/tenant-bench.err" | cut -c1-400 | head -40 || true
echo "--- bench"; tail -6 "$out/tenant-bench.log"
echo "other_tenant bench_rc=$rc_bench tenant_rc=$rc_tenant size=2^$size"
[ $rc_bench -eq 0 ] && [ $rc_tenant -eq 0 ]
