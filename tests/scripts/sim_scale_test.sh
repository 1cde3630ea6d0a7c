#!/usr/bin/env bash
# scripts/sim_scale.py (what scripts/sim-scale.sh runs) on small clusters, 256 and 512 GPUs, 16
# stages and Megatron's TP 8 x PP 16, by default and with every replica (--full): every run
# reports, the reduced run predicts the iteration the full one does, and the default leaves
# replicas out somewhere (sim/symmetry.h).
#   sim_scale_test.sh PIPETWIN
set -euo pipefail
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$source_dir/scripts/sim_scale.py" --pipetwin "$1" --out "$dir" --gpus 256,512 \
  --configs pp16,tp8-pp16 --full > "$dir/table" 2> "$dir/log"
python3 - "$dir/sim-scale.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 8 and not any("error" in r for r in rows), rows
full = {(r["config"], r["gpus"]): r for r in rows if r["mode"] != "default"}
for r in rows:
    f = full[(r["config"], r["gpus"])]
    assert abs(r["iteration_s"] - f["iteration_s"]) <= 1e-9 * f["iteration_s"], (r, f)
    assert r["activities"] <= f["activities"], (r, f)
assert any(r["simulated_replicas"] < full[(r["config"], r["gpus"])]["simulated_replicas"]
           for r in rows if r["mode"] == "default")
print("ok: %d runs, the reduced ones predicting the full ones' iterations" % len(rows))
PY
grep -q "growth exponent" "$dir/table"
