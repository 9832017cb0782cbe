"""tenplex: the training side of the tenplex daemon (save, load, should_stop, elastic, the dataset reader).

The names below (``__all__``) are the training API, typed (``py.typed``). The package holds it in modules
by concept, with the layers below it in subpackages (docs/ARCHITECTURE.md, "The Python client"):

* the training API here: ``checkpoint`` (save, load), ``stop`` (should_stop, generations), ``live``
  (``elastic``: live reconfiguration), ``downtime`` (a reconfiguration's phases), ``data`` (the dataset
  reader), ``streams``, ``rehearsal``, ``describe`` and ``rules`` (a model spec built from an
  ``nn.Module`` and partition rules), ``rank_env`` and ``errors``;
* :mod:`tenplex.wire`: the daemon connection, routes, the tree and value encoding, transfers;
* :mod:`tenplex.launchers`: the per-pod launcher and what ``tenplex run`` runs beside the ranks;
* :mod:`tenplex.tools`: the loss plot.

``tenplex.client`` (the former single module), ``python3 -m tenplex.launch`` and ``python3 -m tenplex.plot``
keep working."""

from . import client  # noqa: F401  (the former module path)
from .checkpoint import SaveHandle, last_loaded, last_saved, load, save, wait_saves
from .data import RankDataset, RankReader, sample_order
from .describe import check as check_spec, describe, shard
from .errors import ConfigMismatch, NoCheckpoint, TenplexError, UnknownJob, UnsavableState
from .live import Config, elastic, end_process_group
from .rules import DescriptionError
from .stop import should_stop
from .wire.http_client import Client
from .wire.torch_values import load_optimizer_state_by_name, optimizer_state_by_name
from .wire.transfer import download, put_file, upload

__version__ = "0.1.0"

__all__ = [
    # checkpoints and the stop flag
    "save", "load", "should_stop", "wait_saves", "last_loaded", "last_saved", "SaveHandle",
    # live reconfiguration
    "elastic", "Config", "end_process_group",
    # datasets
    "RankReader", "RankDataset", "sample_order",
    # model specs
    "describe", "check_spec", "shard", "DescriptionError",
    # the daemon and its store
    "Client", "upload", "download", "put_file",
    # optimizer state that reshards with its parameters
    "optimizer_state_by_name", "load_optimizer_state_by_name",
    # errors
    "TenplexError", "NoCheckpoint", "ConfigMismatch", "UnknownJob", "UnsavableState",
]
