"""The launchers: processes that start, restart and hand roles to a job's ranks.

The per-pod launcher of Kubernetes jobs (``pod``, ``python3 -m tenplex.launch``) in relaunch mode and in
live mode (``pod_live``, with what the pods agree on in ``pod_roles`` and the reasons they sign in ``pod_signed``), the interpreters it starts ahead
(``pod_prestart``, each running ``prestart``) and the rendezvous store a launcher hosts (``store_host``;
``tenplex run`` carries ``prestart`` and ``store_host`` in its jar and runs them with ``python -c``).
May import the training API, :mod:`tenplex.wire` and :mod:`tenplex.errors`; nothing imports it but the
entry point :mod:`tenplex.launch`."""
