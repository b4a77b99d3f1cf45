#!/usr/bin/env bash
# Collects what the GPU tests need on a machine without cargo into DIR (git-ignored `.gpu/`):
# every GPU test binary (gpu_*) that has ignored tests, the `cuzk` binary, the kernels prebuilt for
# sm_90 (DIR/kcache, when NVRTC is here) and run-gpu-tests.sh. Release binaries are stripped.
#   tests/gpu/bundle.sh DIR      then on the GPU machine: DIR/run-gpu-tests.sh DIR
set -euo pipefail
dir=${1:?usage: bundle.sh DIR}
cargo=${CARGO:-cargo}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
rm -f "$dir"/gpu_* "$dir"/cuzk
"$cargo" build --release -q -p cuzk-cli --bin cuzk
cuzk=$(ls -t "${CARGO_TARGET_DIR:-target}"/release/cuzk | head -1)
"$cargo" test --release --workspace --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(m["target"]["name"], m["executable"])
' | while read -r name exe; do
    # The GPU test binaries (engine/tests/gpu_*.rs) that have ignored tests; other ignored tests
    # (e.g. filecoin's 512 MiB seal) are not GPU tests and stay out.
    case "$name" in gpu_*) ;; *) continue ;; esac
    # Count, not `grep -q`: grep leaving early would kill the listing with SIGPIPE, and under
    # pipefail a binary with tests would then be left out at random.
    n=$("$exe" --list --ignored 2>/dev/null | grep -c ': test$' || true)
    if [ "${n:-0}" -gt 0 ]; then
        cp "$exe" "$dir/$name"
        echo "bundled $name ($n GPU tests)"
    fi
done
cp "$cuzk" "$dir/cuzk"
git rev-parse --short HEAD >"$dir/COMMIT" 2>/dev/null && cp "$dir/COMMIT" "$dir/COMMIT.tests" || true
cp "$here/run-gpu-tests.sh" "$here/other-tenant.sh" "$here/start-to-ready.sh" "$here/porep-full.sh" "$here/porep-sweep-run.sh" \
    "$here/sweep-start.sh" "$here/sweep-wait.sh" "$dir/"
command -v strip >/dev/null && strip "$dir"/cuzk "$dir"/gpu_* 2>/dev/null || true
if CUZK_KERNEL_CACHE="$dir/kcache" "$dir/cuzk" kernels build --arch 90 >/dev/null 2>&1; then
    echo "kernels prebuilt for sm_90 in $dir/kcache"
else
    echo "NVRTC absent here: no kernels prebuilt (the GPU machine compiles them)"
fi
echo "bundle: $(du -sh "$dir" | cut -f1) in $dir; run there: $dir/run-gpu-tests.sh $dir"
