#!/bin/sh
# Stands in for a Python with torch: prints what the real op_support probe printed on a CPU-only machine.
cat "$(dirname "$0")/op_support_cpu.json"
