"""tenplex: training-side client of the tenplex daemon (save, load, should_stop, dataset reader)."""

from .client import (Client, NoCheckpoint, TenplexError, download, load, load_optimizer_state_by_name,  # noqa: F401
                     optimizer_state_by_name, put_file, save, should_stop, upload)
from .data import RankReader, RankDataset, sample_order  # noqa: F401

__version__ = "0.1.0"
