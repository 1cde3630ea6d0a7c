#!/usr/bin/env bash
# Several hosts on one machine: network namespaces joined by shaped veth links, and the workers of
# a pipetwin plan started across them the way torchrun would start them on separate hosts.
#
#   scripts/netns.sh up N --rate RATE [--delay D]   N hosts pipetwin-h0..h(N-1) at 10.77.0.1..N/24
#   scripts/netns.sh run SCENARIO [pipetwin run options]
#                                                   `pipetwin-exec run`, whose launcher starts
#                                                   rank k through `netns.sh rank-exec`: in host
#                                                   k mod N, pinned to core k mod cores; the
#                                                   launcher watches them and prints the report
#   scripts/netns.sh rank-exec COMMAND...           (internal) one rank, as the launcher starts it
#   scripts/netns.sh once N --rate RATE [--delay D] SCENARIO [options]
#                                                   up, run, down (down also on INT/TERM/errors)
#   scripts/netns.sh probe [--json]                 the effective link h0 -> h1: TCP round trip
#                                                   and bulk throughput
#   scripts/netns.sh status                         the hosts and their qdiscs
#   scripts/netns.sh down                           removes every namespace `up` made
#
# Topology: every host namespace holds one veth end, pt-eth0, whose peer pt-hK sits in a switch
# namespace pipetwin-sw on a bridge pt-br. Nothing is created in the root namespace, so the
# machine's own interfaces, routes and firewall are never touched. Both ends of every veth get a
# tbf of RATE on their egress, so each direction of a host's link is shaped to RATE (a transfer
# h0 -> h1 crosses h0's pt-eth0 and the switch's pt-h1, both at RATE). --delay D adds a netem
# one-way delay D on each host's egress (round trip 2D plus the veth's own) when the kernel has
# netem; without it the delay cannot be applied here, a warning says so, and the veth's measured
# latency (`probe`) is the link's.
#
# RATE: a number with bit, kbit, mbit, gbit (tc's units, powers of 1000), e.g. 1gbit, 300mbit.
# D: a number with us, ms or s.
#
# Environment:
#   PIPETWIN_BUILD_DIR       build folder holding bin/pipetwin and bin/pipetwin-exec (default build/)
#   PIPETWIN_NETNS_ID        0..254: a separate set of hosts (pipetwin<ID>-h0.., 10.77.<ID>.0/24),
#                            so that a test and an experiment do not meet; default 0 (pipetwin-h0..)
#   PIPETWIN_NETNS_TIMEOUT   seconds a rank may run before it is stopped (default 900)
#
# Exit status: 0 success; 2 refused (no rights, no `ip netns`, bad arguments); otherwise the
# launcher's (exec/launch/launcher.h): a failed run names the rank that failed on stderr and
# exits with its status (124 for a rank over PIPETWIN_NETNS_TIMEOUT).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_BUILD_DIR:-$root/build}
id=${PIPETWIN_NETNS_ID:-0}
me="netns.sh"

die() {  # STATUS MESSAGE: one line on stderr
  echo "$me: $2" >&2
  exit "$1"
}

[[ $id =~ ^[0-9]+$ ]] && ((id <= 254)) || die 2 "PIPETWIN_NETNS_ID must be 0..254, got '$id'"
if ((id == 0)); then ns_prefix=pipetwin; else ns_prefix=pipetwin$id; fi
subnet=10.77.$id
switch=$ns_prefix-sw

host_ns() { echo "$ns_prefix-h$1"; }
host_addr() { echo "$subnet.$(($1 + 1))"; }

# The host namespaces that exist now, h0 first (none: empty).
hosts_up() {
  ip netns list 2>/dev/null | awk -v p="^$ns_prefix-h[0-9]+$" '$1 ~ p {print $1}' | sort -t h -k2 -n -u
}

host_count() { hosts_up | grep -c . || true; }

# Refuses (exit 2, one line) without the rights to make namespaces and shape links: CAP_NET_ADMIN
# (links, qdiscs) and CAP_SYS_ADMIN (`ip netns add` mounts the namespace under /run/netns).
require_rights() {
  command -v ip >/dev/null && command -v tc >/dev/null ||
    die 2 "needs iproute2 (ip and tc); install it (apt-get install iproute2)"
  local caps
  caps=$(awk '/^CapEff:/ {print $2}' /proc/self/status 2>/dev/null || echo 0)
  if (((16#${caps:-0} >> 12 & 1) == 0 || (16#${caps:-0} >> 21 & 1) == 0)); then
    die 2 "needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces and shape links; run it as root or with sudo"
  fi
  local probe_ns="$ns_prefix-check$$" out
  if ! out=$(ip netns add "$probe_ns" 2>&1); then
    die 2 "'ip netns' does not work here ($(echo "$out" | head -1)); network namespaces are needed"
  fi
  ip netns del "$probe_ns" 2>/dev/null || true
}

# RATE (tc units) -> bits per second, integer.
rate_bits_per_s() {
  local text=${1,,}
  [[ $text =~ ^([0-9]+(\.[0-9]+)?)(bit|kbit|mbit|gbit|tbit)$ ]] ||
    die 2 "--rate: expected a number with bit, kbit, mbit, gbit or tbit (e.g. 1gbit, 300mbit), got '$1'"
  local factor
  case ${BASH_REMATCH[3]} in
    bit) factor=1 ;; kbit) factor=1e3 ;; mbit) factor=1e6 ;; gbit) factor=1e9 ;; tbit) factor=1e12 ;;
  esac
  awk -v n="${BASH_REMATCH[1]}" -v f="$factor" 'BEGIN { printf "%.0f", n * f }'
}

# D -> microseconds (a number).
delay_us() {
  local text=${1,,}
  [[ $text =~ ^([0-9]+(\.[0-9]+)?)(us|ms|s)$ ]] ||
    die 2 "--delay: expected a number with us, ms or s (e.g. 100us), got '$1'"
  local factor
  case ${BASH_REMATCH[3]} in us) factor=1 ;; ms) factor=1e3 ;; s) factor=1e6 ;; esac
  awk -v n="${BASH_REMATCH[1]}" -v f="$factor" 'BEGIN { printf "%g", n * f }'
}

# Shapes the egress of DEV in namespace NS: tbf at RATE_BITS (and netem DELAY_US before it when
# the kernel has netem and DELAY_US > 0). Prints "nodelay" when the delay could not be applied.
shape() {  # NS DEV RATE_BITS DELAY_US
  local ns=$1 dev=$2 rate=$3 delay=$4
  # tbf: a bucket of 0.25 ms of traffic (at least four 1514-byte frames), the queue 20 ms, and the
  # veth's GSO packets cut to half the bucket (tbf would split larger ones itself, at more cost).
  # A real link sends every byte at its rate; a bucket that holds much of a message lets that part
  # leave at the veth's speed after a pause, so a pipeline's activations would cross faster than
  # the rate allows. The bucket must still hold a few packets, or timer lateness loses rate (a
  # bucket of one GSO packet passes well under the rate). With these, bulk TCP gets the rate less
  # TCP/IP's headers, as with a large bucket (`probe` measures it; docs/netns.md).
  local burst limit gso
  burst=$(awk -v r="$rate" 'BEGIN { b = r / 8 * 2.5e-4; printf "%d", b < 6056 ? 6056 : b }')
  limit=$(awk -v r="$rate" -v b="$burst" 'BEGIN { printf "%d", r / 8 * 0.02 + b }')
  gso=$((burst / 2 < 65536 ? burst / 2 : 65536))
  ip -n "$ns" link set dev "$dev" gso_max_size "$gso" 2>/dev/null || true
  local tbf=(tbf rate "${rate}bit" burst "$burst" limit "$limit")
  if [[ $delay != 0 ]] &&
    tc -n "$ns" qdisc add dev "$dev" root handle 1: netem delay "${delay}us" 2>/dev/null; then
    tc -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: "${tbf[@]}"
  else
    tc -n "$ns" qdisc add dev "$dev" root "${tbf[@]}"
    [[ $delay == 0 ]] || echo nodelay
  fi
}

cmd_up() {
  local n="" rate="" delay=0
  while (($#)); do
    case $1 in
      --rate) (($# >= 2)) || die 2 "up: --rate needs a value"; rate=$2; shift 2 ;;
      --delay) (($# >= 2)) || die 2 "up: --delay needs a value"; delay=$(delay_us "$2"); shift 2 ;;
      -*) die 2 "up: unknown option '$1' (up N --rate RATE [--delay D])" ;;
      *) [[ -z $n ]] || die 2 "up: one host count expected, got '$n' and '$1'"; n=$1; shift ;;
    esac
  done
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 2 && n <= 64)) || die 2 "up: expected a host count 2..64, got '${n}'"
  [[ -n $rate ]] || die 2 "up: --rate RATE is required (e.g. --rate 1gbit)"
  local rate_bits
  rate_bits=$(rate_bits_per_s "$rate")
  require_rights
  if [[ -n $(hosts_up) ]] || ip netns list 2>/dev/null | grep -qx "$switch\( .*\)\?"; then
    die 1 "hosts $ns_prefix-* are already up ($me down removes them)"
  fi
  trap 'cmd_down >/dev/null 2>&1 || true' EXIT  # a half-built set is removed, not left behind
  ip netns add "$switch"
  ip -n "$switch" link add pt-br type bridge
  ip -n "$switch" link set pt-br up
  local k nodelay=""
  for ((k = 0; k < n; ++k)); do
    local ns
    ns=$(host_ns "$k")
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip link add "pt-h$k" netns "$switch" type veth peer name pt-eth0 netns "$ns"
    ip -n "$switch" link set "pt-h$k" master pt-br up
    ip -n "$ns" addr add "$(host_addr "$k")/24" dev pt-eth0
    ip -n "$ns" link set pt-eth0 up
    nodelay+=$(shape "$ns" pt-eth0 "$rate_bits" "$delay")
    shape "$switch" "pt-h$k" "$rate_bits" 0 >/dev/null
  done
  trap - EXIT
  local delay_text=""
  [[ $delay == 0 ]] || delay_text=", one-way delay ${delay} us"
  [[ -z $nodelay ]] || delay_text=", no delay (no netem)"
  echo "$me: $n hosts $(host_ns 0)..$(host_ns $((n - 1))) at $subnet.1..$n/24, links $rate" \
    "each way$delay_text"
  if [[ -n $nodelay ]]; then
    echo "$me: warning: this kernel has no netem (sch_netem), so the delay of ${delay} us" \
      "cannot be applied; the links keep the veth's own latency (measure it with '$me probe')" >&2
  fi
}

cmd_down() {
  (($# == 0)) || die 2 "down takes no arguments"
  require_rights
  local ns
  # Processes still inside (a killed run's workers) keep a namespace alive after `ip netns del`.
  for ns in $(hosts_up) $(ip netns list 2>/dev/null | awk -v s="$switch" '$1 == s {print $1}'); do
    local pids
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -z $pids ]] || kill -KILL $pids 2>/dev/null || true
    ip netns del "$ns"
  done
  echo "$me: down"
}

cmd_status() {
  local ns
  for ns in $(hosts_up); do
    echo "$ns: $(ip -n "$ns" -4 -o addr show dev pt-eth0 2>/dev/null | awk '{print $4}')" \
      "$(tc -n "$ns" qdisc show dev pt-eth0 2>/dev/null | head -2 | tr '\n' ' ')"
  done
  [[ -n $(hosts_up) ]] || echo "$me: no hosts up"
}

# The cores this script may use (its affinity mask), one per line.
allowed_cores() {
  python3 -c 'import os; print("\n".join(str(c) for c in sorted(os.sched_getaffinity(0))))'
}

# A run across the hosts: the executor's own launcher starts and watches every rank (a dead rank
# stops the others and is named), each through `netns.sh rank-exec`, which places it.
cmd_run() {
  (($# >= 1)) || die 2 "run: expected a SCENARIO (run SCENARIO [pipetwin run options])"
  local scenario=$1
  shift
  require_rights  # first, as every subcommand: without rights nothing else is worth checking
  [[ -f $scenario ]] || die 2 "run: no scenario file $scenario"
  [[ -x $build/bin/pipetwin-exec ]] ||
    die 2 "no $build/bin/pipetwin-exec (build it, or set PIPETWIN_BUILD_DIR)"
  local hosts
  hosts=$(host_count)
  ((hosts > 0)) || die 2 "run: no hosts up ($me up N --rate RATE first)"
  PIPETWIN_NETNS_HOSTS=$hosts exec "$build/bin/pipetwin-exec" run "$scenario" "$@" \
    --rank-prefix "$root/scripts/netns.sh rank-exec"
}

# One rank of a run, as the launcher starts it (RANK and WORLD_SIZE set): rank k in host
# k mod N (its LOCAL_RANK and LOCAL_WORLD_SIZE among that host's ranks), on its share of the
# cores (rank k on core k mod cores when the ranks fill them), meeting rank 0's store at host 0's
# address over the namespace's interface, stopped after PIPETWIN_NETNS_TIMEOUT.
cmd_rank_exec() {
  (($# >= 1)) || die 2 "rank-exec: expected the worker's command (the launcher gives it)"
  [[ -n ${RANK:-} && -n ${WORLD_SIZE:-} && -n ${PIPETWIN_NETNS_HOSTS:-} ]] ||
    die 2 "rank-exec: run by the launcher of '$me run' (RANK, WORLD_SIZE and the hosts unset)"
  local hosts=$PIPETWIN_NETNS_HOSTS workers=$WORLD_SIZE k=$RANK
  local host=$((k % hosts))
  mapfile -t cores < <(allowed_cores)
  local ncores=${#cores[@]}
  local per=$((ncores / workers)) cpus="" j
  ((per >= 1)) || per=1
  for ((j = 0; j < per; ++j)); do cpus+="${cpus:+,}${cores[$(((k * per + j) % ncores))]}"; done
  exec timeout --kill-after=5 "${PIPETWIN_NETNS_TIMEOUT:-900}" taskset -c "$cpus" \
    ip netns exec "$(host_ns "$host")" \
    env LOCAL_RANK=$((k / hosts)) LOCAL_WORLD_SIZE=$(((workers - host + hosts - 1) / hosts)) \
    MASTER_ADDR="$(host_addr 0)" GLOO_SOCKET_IFNAME=pt-eth0 "$@"
}

cmd_once() {
  local up_args=()
  (($# >= 1)) || die 2 "once: expected N --rate RATE [--delay D] SCENARIO [options]"
  up_args+=("$1")
  shift
  while (($#)); do
    case $1 in
      --rate | --delay) (($# >= 2)) || die 2 "once: $1 needs a value"; up_args+=("$1" "$2"); shift 2 ;;
      *) break ;;
    esac
  done
  (($# >= 1)) || die 2 "once: expected a SCENARIO after N --rate RATE [--delay D]"
  cmd_up "${up_args[@]}" >&2
  trap 'cmd_down >/dev/null 2>&1 || true' EXIT
  # The run in a child that we wait for: `wait` returns at once on a signal, a foreground child
  # would hold the trap until it ends. The child stops its workers on TERM.
  (cmd_run "$@") &
  once_runner=$!
  trap 'kill -TERM "$once_runner" 2>/dev/null; wait "$once_runner" 2>/dev/null; exit 130' INT TERM
  local status=0
  wait "$once_runner" || status=$?
  exit "$status"
}

cmd_probe() {
  local json=0
  while (($#)); do
    case $1 in --json) json=1; shift ;; *) die 2 "probe: unknown option '$1' (probe [--json])" ;; esac
  done
  require_rights
  (($(host_count) >= 2)) || die 2 "probe: needs at least 2 hosts up ($me up 2 --rate RATE)"
  local port=$((31000 + RANDOM % 2000)) probe=$root/scripts/netns_probe.py
  ip netns exec "$(host_ns 1)" python3 "$probe" serve --address "$(host_addr 1)" --port "$port" &
  local server=$!
  local status=0
  ip netns exec "$(host_ns 0)" python3 "$probe" measure --address "$(host_addr 1)" --port "$port" \
    --rate-bits "$(configured_rate_bits)" $( ((json)) && echo --json) || status=$?
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  return "$status"
}

# The tbf rate on h0's egress, in bits per second (0 when unknown).
configured_rate_bits() {
  tc -n "$(host_ns 0)" -j qdisc show dev pt-eth0 2>/dev/null | python3 -c '
import json, sys
try:
    rates = [q["options"]["rate"] for q in json.load(sys.stdin) if q.get("kind") == "tbf"]
    print(int(rates[0]) * 8 if rates else 0)
except Exception:
    print(0)'
}

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
}

(($# >= 1)) || { usage >&2; exit 2; }
command=$1
shift
case $command in
  up) cmd_up "$@" ;;
  down) cmd_down "$@" ;;
  run) cmd_run "$@" ;;
  rank-exec) cmd_rank_exec "$@" ;;
  once) cmd_once "$@" ;;
  probe) cmd_probe "$@" ;;
  status) cmd_status "$@" ;;
  -h | --help | help) usage ;;
  *) die 2 "unknown command '$command' (up, run, once, probe, status, down; --help)" ;;
esac
