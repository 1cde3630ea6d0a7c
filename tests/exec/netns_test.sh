#!/usr/bin/env bash
# scripts/netns.sh under test (CTest, RUN_SERIAL; exit 77 = skipped):
#   netns_test.sh run       up 2 hosts at 1gbit, a 2-worker pipeline across them (its JSON report
#                           checked; rank k on core k), a run whose rank 1 kills itself (rank
#                           named, no hang), down, and nothing of ours left: no namespaces, no pt-
#                           interfaces
#   netns_test.sh refuse    without rights every subcommand exits 2 with one line on stderr, and
#                           so does `up` where `ip netns` fails
set -uo pipefail

source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
netns=$source_dir/scripts/netns.sh
# Hosts of our own (pipetwin<ID>-h0.., 10.77.<ID>.0/24), so a crossover run beside is not touched.
export PIPETWIN_NETNS_ID=${PIPETWIN_NETNS_ID:-$((200 + $$ % 50))}
prefix=pipetwin$PIPETWIN_NETNS_ID
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

has_rights() {
  local caps
  caps=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
  (((16#$caps >> 12 & 1) && (16#$caps >> 21 & 1))) || return 1
  ip netns add "$prefix-probe" 2>/dev/null || return 1
  ip netns del "$prefix-probe"
}

leftovers() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$prefix-" || true
  ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep -E '^pt-' || true
}

test_run() {
  if ! has_rights; then
    echo "SKIP: needs root with CAP_NET_ADMIN and CAP_SYS_ADMIN and working 'ip netns'"
    exit 77
  fi
  trap '"$netns" down >/dev/null 2>&1; rm -rf "$work"' EXIT
  "$netns" up 2 --rate 1gbit >"$work/up.txt" 2>&1 || fail "up: $(cat "$work/up.txt")"
  [[ $("$netns" status) == *"$prefix-h1: 10.77.$PIPETWIN_NETNS_ID.2/24"*tbf*"rate 1Gbit"* ]] ||
    fail "status: $("$netns" status)"

  local scenario=$source_dir/scenarios/local-mlp-2stage.json
  "$netns" run "$scenario" --iterations 50 --json >"$work/report.json" 2>"$work/err.txt" &
  local runner=$!
  # Each rank on its own core: taskset gives rank k core k, and the executor pins within that
  # mask although both workers are local rank 0 (it used to pin both to core 0). Sampled once
  # the workers compute.
  local k cores=()
  if (($(nproc) >= 2)); then
    sleep 2
    for k in 0 1; do
      local pid
      pid=$(ip netns pids "$prefix-h$k" | head -1)
      [[ -n $pid ]] || fail "no worker running in $prefix-h$k"
      cores+=("$(awk '/^Cpus_allowed_list/ {print $2}' /proc/"$pid"/task/*/status | sort -u | tr '\n' ' ')")
    done
  fi
  wait "$runner" || fail "run: $(tail -3 "$work/err.txt")"
  if (($(nproc) == 2)); then
    [[ ${cores[0]} == "0 " && ${cores[1]} == "1 " ]] ||
      fail "rank 0 ran on cores '${cores[0]}', rank 1 on '${cores[1]}' (expected 0 and 1)"
  elif ((${#cores[@]})); then
    [[ ${cores[0]} != "${cores[1]}" ]] || fail "both ranks ran on cores '${cores[0]}'"
  fi
  python3 - "$work/report.json" <<'PY' || fail "report: $(head -c 400 "$work/report.json")"
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["source"] == "executor", r["source"]
assert r["worker_count"] == 2 and r["pipeline_depth"] == 2, (r["worker_count"], r["pipeline_depth"])
assert r["samples_per_s"] > 0 and r["iterations"] == 50, (r["samples_per_s"], r["iterations"])
threads = [w.get("threads") for w in r["details"]["workers"]]
share = max(1, len(os.sched_getaffinity(0)) // 2)  # the cores shared between the 2 workers
assert threads == [share, share], (threads, share)
PY

  # A worker that dies: the run ends promptly, names it, and leaves no worker behind.
  local start=$SECONDS status=0
  PIPETWIN_EXEC_FAIL_AT=1:5 "$netns" run "$scenario" --iterations 3 --timeout 20 \
    >/dev/null 2>"$work/fail.txt" || status=$?
  ((status != 0)) || fail "a run whose rank 1 was killed exited 0"
  grep -q "^pipetwin run: rank 1 died" "$work/fail.txt" ||
    fail "the failed rank is not named: $(cat "$work/fail.txt")"
  ((SECONDS - start < 30)) || fail "the failed run took $((SECONDS - start)) s"
  [[ -z $(ip netns pids "$prefix-h0") && -z $(ip netns pids "$prefix-h1") ]] ||
    fail "workers left running in the namespaces"

  "$netns" down >/dev/null || fail "down failed"
  [[ -z $(leftovers) ]] || fail "left behind: $(leftovers | tr '\n' ' ')"
  echo "ok: 2 hosts, a run across them ($(python3 -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["samples_per_s"]))' "$work/report.json") samples/s), a killed rank named, nothing left"
}

test_refuse() {
  # As nobody, without capabilities: each subcommand must refuse with exit 2 and one line.
  local as_nobody=() script=$netns
  if (($(id -u) == 0)); then
    command -v setpriv >/dev/null || { echo "SKIP: no setpriv to drop root"; exit 77; }
    as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
    # nobody must be able to read the script: a checkout inside a private folder (mktemp -d is
    # 0700) is out of its reach, so it runs a world-readable copy.
    chmod 755 "$work"
    mkdir -p "$work/scripts"
    cp "$netns" "$work/scripts/netns.sh"
    chmod 755 "$work/scripts" "$work/scripts/netns.sh"
    script=$work/scripts/netns.sh
  fi
  local args
  for args in "up 2 --rate 1gbit" "down" "probe" "run $source_dir/scenarios/local-mlp-2stage.json"; do
    local status=0
    # shellcheck disable=SC2086
    (cd / && "${as_nobody[@]}" "$script" $args) >"$work/out.txt" 2>"$work/err.txt" || status=$?
    ((status == 2)) || fail "'netns.sh $args' without rights exited $status: $(cat "$work/err.txt")"
    (($(wc -l <"$work/err.txt") == 1)) || fail "'netns.sh $args': not one line: $(cat "$work/err.txt")"
    grep -q "needs root" "$work/err.txt" || fail "'netns.sh $args': $(cat "$work/err.txt")"
  done
  local refusal
  refusal=$(cat "$work/err.txt")
  # With the rights but a kernel or container where `ip netns` fails (an `ip` that fails so).
  if (($(id -u) == 0)); then
    mkdir -p "$work/bin"
    printf '#!/bin/sh\n[ "$1 $2" = "netns add" ] && { echo "mount --make-shared /run/netns failed: Operation not permitted" >&2; exit 1; }\nexec %s "$@"\n' "$(command -v ip)" >"$work/bin/ip"
    chmod +x "$work/bin/ip"
    local status=0
    PATH=$work/bin:$PATH "$netns" up 2 --rate 1gbit >"$work/out.txt" 2>"$work/err.txt" || status=$?
    ((status == 2)) || fail "up with a failing 'ip netns' exited $status: $(cat "$work/err.txt")"
    (($(wc -l <"$work/err.txt") == 1)) && grep -q "'ip netns' does not work here" "$work/err.txt" ||
      fail "up with a failing 'ip netns': $(cat "$work/err.txt")"
  fi
  [[ -z $(leftovers) ]] || fail "left behind: $(leftovers | tr '\n' ' ')"
  echo "ok: up, down, probe and run refuse without rights ($refusal) and without 'ip netns'"
}

case ${1:-} in
  run) test_run ;;
  refuse) test_refuse ;;
  *) echo "usage: netns_test.sh run|refuse" >&2; exit 2 ;;
esac
