"""Main jobs behind the ``aaren-ts`` command (one module per sub-command)."""
