"""tenplex: training-side client of the tenplex daemon (save, load, should_stop, dataset reader).

Modules: ``http_client`` (the daemon connection), ``layout`` (job paths and routes), ``codec`` (a
state's tree <-> store entries), ``transfer`` (upload/download), ``checkpoint`` (save, load,
should_stop, generations), ``torch_helpers`` (torch, optimizer state), ``data`` (the dataset reader),
``launch`` (the per-pod launcher), ``live`` (``elastic``: live reconfiguration), ``store_host`` (the
launcher's rendezvous store), ``checksum`` (CRC32C), ``describe`` and ``rules`` (a model spec built
from an ``nn.Module`` and partition rules); ``client`` re-exports the old names."""

from . import client  # noqa: F401  (the former module path)
from .checkpoint import SaveHandle, last_loaded, load, save, should_stop, wait_saves  # noqa: F401
from .describe import check as check_spec, describe, shard  # noqa: F401
from .data import RankDataset, RankReader, sample_order  # noqa: F401
from .errors import ConfigMismatch, NoCheckpoint, TenplexError, UnknownJob, UnsavableState  # noqa: F401
from .rules import DescriptionError  # noqa: F401
from .wire.http_client import Client  # noqa: F401
from .wire.torch_values import load_optimizer_state_by_name, optimizer_state_by_name  # noqa: F401
from .wire.transfer import download, put_file, upload  # noqa: F401
from .live import Config, elastic  # noqa: F401

__version__ = "0.1.0"
