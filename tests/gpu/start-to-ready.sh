#!/usr/bin/env bash
# A fresh daemon start to `ready` on a GPU machine (issue 15), twice: with an empty kernel cache
# (the daemon compiles the modules), then after `cuzk kernels build` filled a new cache. Each time
# from the daemon's launch until `cuzk ctl ready` exits 0; the daemon's start-up phases are in
# OUT/start-*.err. Last line `start_to_ready_ms cold=… after_kernels_build=… kernels_build_ms=…`.
#   tests/gpu/start-to-ready.sh DIR OUT      (DIR: a `make gpu-bundle` directory with `cuzk`)
set -euo pipefail
dir=${1:?usage: start-to-ready.sh DIR OUT}
out=${2:?usage: start-to-ready.sh DIR OUT}
cuzk=$dir/cuzk
mkdir -p "$out"
now() { date +%s%N; }
one() { # $1: a name; the kernel cache is $CUZK_KERNEL_CACHE
    local sock=$out/start-$1.sock s t rc
    rm -f "$sock"
    s=$(now)
    "$cuzk" daemon --socket "$sock" --params-dir "$out/start-params" >"$out/start-$1.log" 2>"$out/start-$1.err" &
    local pid=$!
    while :; do
        rc=0; "$cuzk" ctl --socket "$sock" ready >/dev/null 2>&1 || rc=$?
        [ $rc -eq 0 ] && break
        kill -0 $pid 2>/dev/null || { tail -20 "$out/start-$1.err"; echo "daemon died"; exit 1; }
        sleep 0.05
    done
    t=$(( ($(now) - s) / 1000000 ))
    kill -TERM $pid; wait $pid || true
    echo "$t"
}
export CUZK_KERNEL_CACHE=$out/kcache-cold
rm -rf "$CUZK_KERNEL_CACHE"
cold=$(one cold)
export CUZK_KERNEL_CACHE=$out/kcache-built
rm -rf "$CUZK_KERNEL_CACHE"
s=$(now)
"$cuzk" kernels build >"$out/kernels-build.log" 2>&1
kb=$(( ($(now) - s) / 1000000 ))
built=$(one built)
echo "start_to_ready_ms cold=$cold after_kernels_build=$built kernels_build_ms=$kb"
