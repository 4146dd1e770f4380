"""The reviewer's side: the commands that read what earlier batches wrote.

- ``modes``: --why, --merge and --cfep3-request on the console;
- ``why``: ``--why CONFIG``, the first real error of a failed config's log;
- ``merge``: ``--merge DIR...``, several machines' build_artifacts/ combined into one;
- ``report``: ``--report [DIR...]``, the CFEP-03 comment (report.md) and timeline.svg;
- ``verify``: ``--verify DIR [--commit SHA]``, the CFEP-03 reviewer's check of an upload;
- ``cfep3``: the conda-forge/admin-requests entry that asks to copy a CFEP-03 upload;
- ``embedded``: the commit a package carries in info/about.json.
"""
