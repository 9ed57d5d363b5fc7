"""Test-only probe that misbehaves on purpose, so the runner's crash handling can be tested for real.

Not listed in probes.PROBES. Modes: segv (kills itself with SIGSEGV), hang, junk (non-JSON
stdout), exit (non-zero status).
"""

from __future__ import annotations

import os
import signal
import sys
import time


def main(argv: list[str]) -> int:
    mode = argv[argv.index("--mode") + 1] if "--mode" in argv else "segv"
    if mode == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif mode == "hang":
        time.sleep(3600)
    elif mode == "junk":
        print("this is not json {")
    elif mode == "exit":
        print("fatal: probe gave up", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
