"""The client's former single module, kept so that ``from tenplex.client import ...`` goes on working.

The code lives in modules with one responsibility each (docs/CLIENTS.md): :mod:`tenplex.wire.http_client`
(the daemon connection), :mod:`tenplex.wire.routes` (job paths and routes), :mod:`tenplex.wire.tree_codec` (the tree
layout), :mod:`tenplex.wire.transfer` (upload and download), :mod:`tenplex.checkpoint` (save, load,
should_stop) and :mod:`tenplex.wire.torch_values` (torch and optimizer state)."""

from .checkpoint import load, save, should_stop  # noqa: F401
from .wire.tree_codec import TENSOR  # noqa: F401
from .errors import NoCheckpoint, TenplexError  # noqa: F401
from .wire.http_client import Client  # noqa: F401
from .wire.routes import quote_path as _p  # noqa: F401
from .wire.torch_values import load_optimizer_state_by_name, optimizer_state_by_name  # noqa: F401
from .wire.transfer import download, put_file, upload  # noqa: F401
