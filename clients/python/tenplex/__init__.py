"""tenplex: training-side client of the tenplex daemon."""

from .data import RankReader, RankDataset, sample_order  # noqa: F401
