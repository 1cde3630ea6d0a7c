#!/usr/bin/env bash
# scripts/speed_readings.py on hand-made comparisons whose figures are known:
#   a: the run read 80 GFLOP/s against the profile's 100 and computed 1.25x the prediction
#      (predicted 120 samples/s, measured 100: +20%);
#   b: 100 and 100, compute as predicted, no error;
#   c: 125 against 100, compute 0.8x, predicted 84 against 100 (-16%);
#   rep-2/d: no readings (a GPU run, an older file): listed, left out of the statistics.
# log(profile/run) = log(compute) on every read row: correlation 1.00, slope 1.00.
set -euo pipefail
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
row() {  # FILE PREDICTED MEASURED PREDICTED_BUSY MEASURED_BUSY SPEED_JSON
  cat >"$1" <<ROW
{"predicted": {"samples_per_s": $2, "iterations": 2, "workers": [{"busy_by_op_s": {"forward": $4}}]},
 "measured": {"samples_per_s": $3, "iterations": 2, "workers": [{"busy_by_op_s": {"backward": $5}}]},
 "machine_speed": $6}
ROW
}
mkdir -p "$dir/m/rep-2"
row "$dir/m/a.compare.json" 120 100 2 2.5 '{"profile_gflops": 100, "run_gflops": 80}'
row "$dir/m/b.compare.json" 100 100 2 2 '{"profile_gflops": 100, "run_gflops": 100}'
row "$dir/m/c.compare.json" 84 100 2 1.6 '{"profile_gflops": 100, "run_gflops": 125}'
row "$dir/m/rep-2/d.compare.json" 100 100 2 2 'null'
out=$(python3 "$source_dir/scripts/speed_readings.py" "$dir/m")
echo "$out"
source "$source_dir/tests/scripts/checks.sh"
expect() { expect_line "$out" "$1"; }
expect "4 comparisons in $dir/m, 3 with both speed readings"
expect "a                                         +20.0%    100.0    80.0       0.800    1.250"
expect "rep-2/d                                    +0.0%      0.0     0.0         nan    1.000"
expect "against log(measured/predicted compute): correlation 1.00, slope 1.00"
expect "against the throughput error: correlation 1.00"
expect "speed held (within 5%: yes): 1 rows, mean absolute error 0.0%, worst 0.0%"
expect "speed moved (within 5%: no): 2 rows, mean absolute error 18.0%, worst 20.0%"
# Not a comparison: one line naming the file, exit 2.
echo '{"predicted": 3}' >"$dir/m/bad.compare.json"
expect_input_error "a malformed comparison" "$dir/m/bad.compare.json: not a \`pipetwin compare --json\` result" \
  python3 "$source_dir/scripts/speed_readings.py" "$dir/m"
echo "speed_readings_test: passed"
