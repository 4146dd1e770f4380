"""The reviewer's side: ``python -m tools review``, the commands that read what earlier
batches wrote (tools/commands/review.py parses them).

- ``upload``: a batch folder or its log_files.zip, read alike by every command below;
- ``verify``: ``review verify DIR [--commit SHA]``, the CFEP-03 reviewer's check of an upload;
- ``sign``: ``review sign [DIR] --channel CHANNEL``, a CEP 27 attestation per package, signed
  with Sigstore into ``<package>.sigs``; ``attest``: the statement it signs and the channel URL;
  ``signatures``: the sidecars checked offline, for ``verify`` and ``report``;
- ``report``: ``review report [DIR...]``, the CFEP-03 comment (report.md) and timeline.svg
  (``timeline``), over one row per config (``rows``);
- ``modes``: ``review request``, ``review merge`` and ``review why`` on the console;
- ``cfep3``: the conda-forge/admin-requests entry that asks to copy a CFEP-03 upload;
- ``merge``: several machines' build_artifacts/ combined into one;
- ``publish``: ``review publish DEST``, a verified batch put into a channel;
- ``why``: the first real error of a failed config's log;
- ``embedded``: the commit a package carries in info/about.json.
"""
