#!/usr/bin/env bash
# The next device call after sweep-start.sh: waits up to WATCH seconds (default 570) for the
# sweep, then brings its log, timelines and memory samples back ($OUT/sweep.log,
# $OUT/sweep-files.tgz); with TESTS=1 and time left, the other GPU tests after it
# ($OUT/gpu-test-logs.tgz). DIR (default /tmp/sweep) names the sweep to wait for.
B=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s)
while [ $(( $(date +%s) - t0 )) -lt ${WATCH:-570} ]; do grep -q 'sweep rc=' ${DIR:-/tmp/sweep}/run.log && break; sleep 10; done
cp ${DIR:-/tmp/sweep}/sweep.log "$OUT/" 2>/dev/null
(cd /tmp && tar czf "$OUT/sweep-files.tgz" $(basename ${DIR:-/tmp/sweep}) porep-work/memory.log porep-work/timeline porep-work/synth-c1.log 2>/dev/null)
grep -E '^(run |porep_|alone |stream |summary|memory|# setup|# rec|sweep rc|cgroup|error|Error)' ${DIR:-/tmp/sweep}/sweep.log | tail -30
tail -4 ${DIR:-/tmp/sweep}/sweep.log; free -g | sed -n 2p; nvidia-smi --query-gpu=memory.used --format=csv,noheader
if [ -n "${TESTS:-}" ] && grep -q 'sweep rc=' ${DIR:-/tmp/sweep}/run.log; then
  export CUZK_KERNEL_CACHE=$B/kcache; mkdir -p /tmp/tb; cp $B/gpu_* /tmp/tb/; rm -f /tmp/tb/gpu_streamed; cp $B/run-gpu-tests.sh /tmp/tb/
  timeout $(( ${WATCH:-570} + 20 - ($(date +%s) - t0) )) /tmp/tb/run-gpu-tests.sh /tmp/tb /tmp/gpu-test-logs 2>&1 | tail -12
  (cd /tmp && tar czf "$OUT/gpu-test-logs.tgz" gpu-test-logs)
fi
