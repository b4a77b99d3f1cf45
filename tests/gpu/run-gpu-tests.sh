#!/usr/bin/env bash
# Runs the GPU tests on a machine without cargo: every test binary in DIR (as `make gpu-bundle`
# collects them) with `--ignored --test-threads=1`, one log per binary, then a summary.
#   tests/gpu/run-gpu-tests.sh DIR [LOG_DIR]      (exit 0 only if every binary passed)
# Needs libcuda and NVRTC 13 on the loader path; DIR/kcache (prebuilt kernels) is used when present.
set -u
dir=${1:?usage: run-gpu-tests.sh DIR [LOG_DIR]}
logs=${2:-${OUT:-$dir}/gpu-test-logs}
mkdir -p "$logs"
if [ -d "$dir/kcache" ] && [ -z "${CUZK_KERNEL_CACHE:-}" ]; then
    export CUZK_KERNEL_CACHE="$dir/kcache"
fi
bins=0 passed=0 failed=0 ignored=0 bad=()
for b in "$dir"/*; do
    name=$(basename "$b")
    [ -f "$b" ] && [ -x "$b" ] || continue
    case "$name" in cuzk | *.sh) continue ;; esac
    bins=$((bins + 1))
    "$b" --ignored --test-threads=1 >"$logs/$name.log" 2>&1
    rc=$?
    line=$(grep -E '^test result:' "$logs/$name.log" | tail -1)
    p=$(sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$line")
    f=$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$line")
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    if [ $rc -ne 0 ]; then
        bad+=("$name")
        [ -z "$f" ] && failed=$((failed + 1)) # crashed before libtest's summary
    fi
    echo "$name: rc=$rc ${line:-no test result (see $logs/$name.log)}"
done
echo "gpu_test_binaries=$bins passed=$passed failed=$failed failing_binaries=${bad[*]:-none} logs=$logs"
[ "$bins" -gt 0 ] && [ ${#bad[@]} -eq 0 ]
