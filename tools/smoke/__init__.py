"""The GPU smoke test of one config's built packages (``gpu``)."""
