#!/usr/bin/env bash
# One device call for issue 35 within the 10-minute limit of a call: the streamed tier's GPU test,
# then the 32 GiB sweep (porep-sweep-run.sh) started in a session of its own, so that it outlives
# the call while the machine is held; sweep-wait.sh, called next, collects it. Watches it for
# WATCH seconds (default 560) and copies what it printed so far to $OUT.
#   SWEEP=16384,0 COUNT=2 J=2 WATCH=470 BUNDLE/sweep-start.sh      (then BUNDLE/sweep-wait.sh)
# With THEN_SWEEP (e.g. 16384,24576,32768,0), a second sweep follows the first in /tmp/sweep2, at
# THEN_J (default 1) and THEN_COUNT (default 1): `DIR=/tmp/sweep2 BUNDLE/sweep-wait.sh` collects it.
# With H2D=1, the copy paths' rates (`bench kernels --only h2d`) are printed first.
# If gpu_streamed fails, it runs again with CUZK_STREAM_OVERLAP=0 (the queries after the H-MSM):
# if that passes, the sweep runs so; else compute-sanitizer runs it and the sweep takes the whole
# card only.
B=$(cd "$(dirname "$0")" && pwd)
export CUZK_KERNEL_CACHE=$B/kcache
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; free -g | head -2
echo "cuzk $(cat $B/COMMIT) tests $(cat $B/COMMIT.tests)"
t0=$(date +%s)
if [ -n "${H2D:-}" ]; then
  timeout 120 "$B/cuzk" bench kernels --only h2d --reps 3 > "$OUT/h2d.log" 2>&1; echo "h2d rc=$?"; grep -E '^h2d_' "$OUT/h2d.log"
fi
timeout 240 "$B/gpu_streamed" --ignored --test-threads=1 > "$OUT/gpu_streamed.log" 2>&1
echo "gpu_streamed rc=$? in $(( $(date +%s) - t0 )) s"; grep -E '^test |test result|panicked|Error' "$OUT/gpu_streamed.log" | head -8
if grep -q 'test result: ok. 1 passed' "$OUT/gpu_streamed.log"; then SW=${SWEEP:-16384,0,24576,32768}; else
  echo "gpu_streamed FAILED: again with CUZK_STREAM_OVERLAP=0"
  CUZK_STREAM_OVERLAP=0 timeout 240 "$B/gpu_streamed" --ignored --test-threads=1 > "$OUT/gpu_streamed_in_turn.log" 2>&1
  if grep -q 'test result: ok. 1 passed' "$OUT/gpu_streamed_in_turn.log"; then
    echo "passes with the queries in turn: the sweep runs so"; export CUZK_STREAM_OVERLAP=0; SW=${SWEEP:-16384,0,24576,32768}
  else
    echo "fails in turn too: sanitizer on it, sweep on the whole card only"
    timeout 200 /usr/local/cuda/bin/compute-sanitizer --print-limit 5 "$B/gpu_streamed" --ignored --test-threads=1 > "$OUT/sanitizer.log" 2>&1; grep -v '^=========     ' "$OUT/sanitizer.log" | tail -30
    SW=0
  fi; fi
mkdir -p /tmp/sweep
if [ -n "${THEN_SWEEP:-}" ] && [ "$SW" != 0 ]; then mkdir -p /tmp/sweep2; THEN="; SKIP_TESTS=1 SWEEP=$THEN_SWEEP '$B/porep-sweep-run.sh' '$B' /tmp/sweep2 ${THEN_COUNT:-1} ${THEN_J:-1} > /tmp/sweep2/run.log 2>&1"; else THEN=; fi
SKIP_TESTS=1 SWEEP=$SW setsid nohup bash -c "'$B/porep-sweep-run.sh' '$B' /tmp/sweep ${COUNT:-2} ${J:-2} > /tmp/sweep/run.log 2>&1 $THEN" < /dev/null > /dev/null 2>&1 &
echo "sweep $SW count=${COUNT:-2} j=${J:-2} started at $(date +%T)"
# The log and timelines are copied to $OUT as they grow: a call stopped at its limit still brings them back.
while [ $(( $(date +%s) - t0 )) -lt ${WATCH:-560} ]; do sleep 10
  cp /tmp/sweep/sweep.log "$OUT/" 2>/dev/null; (cd /tmp && tar czf "$OUT/timelines.tgz" porep-work/timeline porep-work/memory.log 2>/dev/null)
  grep -q 'sweep rc=' /tmp/sweep/run.log && break; done
cp /tmp/sweep/sweep.log "$OUT/" 2>/dev/null
grep -E '^(run |porep_|alone |stream |summary|memory|# setup|# rec|sweep rc|cgroup)' /tmp/sweep/sweep.log | tail -20
tail -3 /tmp/sweep/sweep.log; free -g | sed -n 2p; nvidia-smi --query-gpu=memory.used --format=csv,noheader
