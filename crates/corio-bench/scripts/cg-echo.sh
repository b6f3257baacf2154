#!/bin/bash
# Instructions a corio-bench echo server executes, counted by callgrind (repeatable whatever
# the machine is doing, unlike a timing).
#
#   cg-echo.sh BIN SERVER N [CONNS]   (SERVER: corio, corio-async, tokio, may; CONNS: 16)
#
# Starts `BIN __child echo serve SERVER` under callgrind, has CONNS connections make N round
# trips of 64 bytes each (echo_client.py), and prints the server's total instructions (Ir).
# To compare two builds, build both with CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1: with the
# default 16 codegen units a change anywhere can move the inlining of the hot path, and one
# build's counts spread ±30 per message between runs; with 1 unit they mostly agree within
# ±5 (one run in eight was 35 high here): take the median of three.
# Instructions per message: run it at N and 2N and divide the difference by CONNS * N
# (start-up and shutdown cancel out), e.g. N=1000 and N=2000: (total@2000 - total@1000) / 16,000.
set -eu
BIN=$1; SRV=$2; N=$3; CONNS=${4:-16}
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$DIR/out.%p" "$BIN" __child echo serve "$SRV" \
    > "$DIR/srv.out" 2> "$DIR/srv.err" &
VP=$!
for _ in $(seq 600); do grep -q '^@addr' "$DIR/srv.out" && break; sleep 0.1; done
ADDR=$(grep '^@addr' "$DIR/srv.out" | awk '{print $2}')
python3 "$HERE/echo_client.py" "${ADDR%:*}" "${ADDR##*:}" "$CONNS" "$N" || echo "client failed" >&2
kill -TERM $VP; wait $VP 2>/dev/null || true
grep -h '^summary' "$DIR"/out.* | awk '{s+=$2} END {print s}'
