"""Tools beside training: ``loss_plot`` (``python3 -m tenplex.plot``: loss curves of a job's log).
Imports nothing else of tenplex."""
