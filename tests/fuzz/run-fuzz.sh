#!/bin/sh
# run-fuzz.sh BINARY CORPUS_DIR SECONDS [SEED_DIR]
# Runs one libFuzzer target for a bounded time over a fresh corpus seeded from
# SEED_DIR; exits non-zero on any crash, leak or sanitizer report.
set -eu
bin=$1; corpus=$2; secs=$3; seeds=${4:-}
rm -rf "$corpus"; mkdir -p "$corpus"
if [ -n "$seeds" ] && [ -d "$seeds" ]; then cp "$seeds"/* "$corpus"/ 2>/dev/null || true; fi
exec "$bin" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
     -print_final_stats=1 -artifact_prefix="$corpus/../" "$corpus"
