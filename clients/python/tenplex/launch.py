"""``python3 -m tenplex.launch``: the per-pod launcher's command, whose code is
:mod:`tenplex.launchers.pod` (``from tenplex.launch import main`` keeps working too)."""

import sys

from .launchers.pod import current_assignment, environment, main, wait_for_assignment  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
