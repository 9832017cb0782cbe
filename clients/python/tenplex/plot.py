"""``python3 -m tenplex.plot``: loss plots of a training job's log, whose code is
:mod:`tenplex.tools.loss_plot` (``from tenplex.plot import loss_plot`` keeps working too)."""

import sys

from .tools.loss_plot import loss_plot, main, read_log  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
