#!/usr/bin/env bash
# Run the whole live-probe suite once on an accelerator machine and print the results.
#
#   scripts/device-check.sh [cuda|npu|cpu]      (default: cuda)
#
# PYTHON: the Python with torch that probes run under (default: python3).
# RUNNER_PYTHON: the Python with ascend-triage's dependencies (pydantic) that runs the runner
#                (default: $PYTHON). OUT: where probes.json goes (default: a new temp dir).
# If the requested accelerator is not visible, the suite runs on the CPU instead and says so, so
# the script itself can be checked on a CPU-only box. Exit code: that of `triage probe run all`
# (0 ok, 1 finding, 2 probe error).
set -uo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
RUNNER_PY="${RUNNER_PYTHON:-$PY}"
DEVICE="${1:-cuda}"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export TORCH_DEVICE_BACKEND_AUTOLOAD=0

visible() {
    "$PY" - "$1" <<'PYEOF' 2>/dev/null
import sys, torch
dev = sys.argv[1]
if dev == "npu":
    import torch_npu  # noqa: F401
sys.exit(0 if dev == "cpu" or torch.get_device_module(dev).is_available() else 1)
PYEOF
}

if ! visible "$DEVICE"; then
    echo "device-check: no $DEVICE device visible to $PY; running on cpu instead" >&2
    DEVICE=cpu
fi

echo "device-check: $(date -u +%FT%TZ) host=$(hostname) device=$DEVICE python=$PY"
"$PY" -c "import torch; print('torch', torch.__version__, '| cuda build', torch.version.cuda, '| cuda available', torch.cuda.is_available())"
if [ "$DEVICE" = cuda ] && command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv
fi

"$RUNNER_PY" -m triage.cli.probe_cmd run all --json --device "$DEVICE" --python "$PY" --timeout 300 > "$OUT/probes.json"
rc=$?
if [ ! -s "$OUT/probes.json" ]; then
    echo "device-check: the probe runner produced no results (exit $rc)" >&2
    exit 2
fi

"$RUNNER_PY" - "$OUT/probes.json" <<'PYEOF'
import json, sys
from probes._common import human_summary
for result in json.load(open(sys.argv[1])):
    print(human_summary(result))
    if result.get("stderr_tail") and result["status"] == "error":
        print("  stderr tail:", result["stderr_tail"].strip().splitlines()[-1][:300])
PYEOF
echo "device-check: exit $rc (0 ok, 1 finding, 2 error); full JSON in $OUT/probes.json"
exit "$rc"
