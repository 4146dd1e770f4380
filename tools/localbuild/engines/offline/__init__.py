"""Builds without internet: ``--channel`` and ``--source-cache`` checked before the build
(``airgap``), and what a build would download, for ``--dry-run`` (``fetches``)."""
