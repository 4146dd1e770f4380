"""Pin drift: what upstream PyTorch requires or ships, the recipe applies, conda-forge carries.

Data flows one way, as pure functions over frozen records:

- ``upstream_tree`` reads an unpacked PyTorch source tree, ``upstream_wheel`` a wheel's METADATA,
  both into ``UpstreamClaim`` records (``model``); ``pep440`` translates PyPI requirements.
- ``recipe`` turns rendered outputs into ``RecipeSpec`` records; ``channel`` reads conda-forge
  versions (a JSON file, or the channel through py-rattler when online).
- ``compare`` relates two version specs with conda semantics; ``table`` assembles ``DriftRow``
  records and renders them as text, Markdown or JSON, and rewrites the README section.
"""
