"""What a config costs and where it runs, one cost model for all of them.

- ``facts``: what a config says about its cost and its runners (CUDA, Pythons, labels);
- ``shard``: ``--shard K/N``, the selection split over machines by expected build time;
- ``eta``: the expected finish of the current config and of the batch (same cost model);
- ``runners``: the GitHub Actions jobs of .github/workflows/build.yml (``python -m tools runners``).
"""
