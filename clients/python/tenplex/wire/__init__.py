"""The wire and value encoding: how a state travels to and from a daemon.

The daemon connection (``http_client``, with ``crc32c`` for body checksums), the store paths and REST
routes (``routes``), a state's tree to store entries and back (``tree_codec``, Python types in
``type_tags``, torch and numpy values in ``torch_values``), moving entries over HTTP (``transfer``,
``batched_upload``) or through the daemon's shared memory (``shared_memory``), and a saved tree back into
a state (``restore``). Imports only :mod:`tenplex.errors` from outside itself."""
