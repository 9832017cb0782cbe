"""The client's former single module, kept so that ``from tenplex.client import ...`` goes on working.

The code lives in modules with one responsibility each (docs/CLIENTS.md): :mod:`tenplex.http_client`
(the daemon connection), :mod:`tenplex.layout` (job paths and routes), :mod:`tenplex.codec` (the tree
layout), :mod:`tenplex.transfer` (upload and download), :mod:`tenplex.checkpoint` (save, load,
should_stop) and :mod:`tenplex.torch_helpers` (torch and optimizer state)."""

from .checkpoint import load, save, should_stop  # noqa: F401
from .codec import TENSOR  # noqa: F401
from .errors import NoCheckpoint, TenplexError  # noqa: F401
from .http_client import Client  # noqa: F401
from .layout import quote_path as _p  # noqa: F401
from .torch_helpers import load_optimizer_state_by_name, optimizer_state_by_name  # noqa: F401
from .transfer import download, put_file, upload  # noqa: F401
