"""One module per ``python -m tools`` command (see tools/__main__.py for the contract)."""
