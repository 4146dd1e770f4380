"""``python -m tools layout``: upstream's wheel replayed through the recipe's packaging stages."""
