#!/usr/bin/env bash
# Prints, from a `cargo test` log, how many tests were ignored and why, by test binary; the GPU
# tests are ignored where there is none (run them with `make test-gpu` or run-gpu-tests.sh).
#   tests/gpu/ignored-summary.sh LOG
set -u
log=${1:?usage: ignored-summary.sh LOG}
awk '
/^ *Running / { bin = $2; sub(/.*\//, "", bin); sub(/\.rs$/, "", bin) }
/^test .* \.\.\. ignored/ {
    n++
    reason = $0; sub(/.* \.\.\. ignored,? ?/, "", reason); if (reason == "") reason = "(no reason given)"
    by[reason]++; bins[reason] = bins[reason] (index(bins[reason], bin " ") ? "" : bin " ")
}
END {
    printf "ignored tests: %d\n", n
    for (r in by) printf "  %d ignored: %s\n    in: %s\n", by[r], r, bins[r]
}' "$log"
