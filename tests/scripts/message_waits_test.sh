#!/usr/bin/env bash
# scripts/message_waits.py on a hand-made trace of three messages whose times are known:
#   F0: worker 1 posts its receive at 500 us, worker 0 sends at 1000 and computes 1000-2000;
#       received at 3000: 2000 us, its sender computing.
#   F1: sent at 2000, received 4000-4100: 100 us, worker 0 idle since 2000.
#   B0: worker 0 posts at 4500, worker 1 sends at 5000 and computes 5000-6000; received at 5200:
#       200 us, its sender computing.
set -euo pipefail
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/trace.json" <<'TRACE'
{"traceEvents": [
 {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "worker 0"}},
 {"ph": "X", "pid": 0, "tid": 0, "name": "0F0", "cat": "forward", "ts": 0, "dur": 1000, "args": {"microbatch": 0, "stage": 0}},
 {"ph": "X", "pid": 0, "tid": 0, "name": "0F1", "cat": "forward", "ts": 1000, "dur": 1000, "args": {"microbatch": 1, "stage": 0}},
 {"ph": "X", "pid": 0, "tid": 1, "name": "0SEND_F0", "cat": "send_activation", "ts": 1000, "dur": 2000, "args": {"microbatch": 0, "stage": 0, "peer_pid": 1}},
 {"ph": "X", "pid": 0, "tid": 1, "name": "0SEND_F1", "cat": "send_activation", "ts": 2000, "dur": 2100, "args": {"microbatch": 1, "stage": 0, "peer_pid": 1}},
 {"ph": "X", "pid": 1, "tid": 2, "name": "1RECV_F0", "cat": "recv_activation", "ts": 500, "dur": 2500, "args": {"microbatch": 0, "stage": 1, "peer_pid": 0}},
 {"ph": "X", "pid": 1, "tid": 2, "name": "1RECV_F1", "cat": "recv_activation", "ts": 4000, "dur": 100, "args": {"microbatch": 1, "stage": 1, "peer_pid": 0}},
 {"ph": "X", "pid": 1, "tid": 0, "name": "1B1", "cat": "backward", "ts": 5000, "dur": 1000, "args": {"microbatch": 1, "stage": 1}},
 {"ph": "X", "pid": 1, "tid": 1, "name": "1SEND_B0", "cat": "send_gradient", "ts": 5000, "dur": 200, "args": {"microbatch": 0, "stage": 1, "peer_pid": 0}},
 {"ph": "X", "pid": 0, "tid": 2, "name": "0RECV_B0", "cat": "recv_gradient", "ts": 4500, "dur": 700, "args": {"microbatch": 0, "stage": 0, "peer_pid": 1}}
]}
TRACE
out=$(python3 "$source_dir/scripts/message_waits.py" "$dir/trace.json" --slowest 1)
echo "$out"
source "$source_dir/tests/scripts/checks.sh"
expect() { expect_line "$out" "$1"; }
expect "3 messages in $dir/trace.json"
expect "moved while the sender computed: 2, mean 1100 us, median 1100 us, 90th percentile 2000 us, 1 over 1 ms"
expect "moved while it did not: 1, mean 100 us, median 100 us, 90th percentile 100 us, 0 over 1 ms"
expect "the first against the second: +1000 us a message on average"
expect "  1RECV_F0 2000 yes [-1000..0, 0..1000]"
# Not a trace: one line naming the file, exit 2.
echo '{"traceEvents": 3' >"$dir/bad.json"
expect_input_error "a malformed trace" "$dir/bad.json: not a pipetwin trace" \
  python3 "$source_dir/scripts/message_waits.py" "$dir/bad.json"
echo "message_waits_test: passed"
