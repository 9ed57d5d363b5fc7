import sys

from triage.cli.main import main

sys.exit(main())
