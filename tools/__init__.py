"""Maintainers' toolkit for the PyTorch feedstock (run as ``python -m tools``)."""
