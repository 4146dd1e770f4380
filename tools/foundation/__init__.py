"""What every part of the toolkit stands on: errors and exit codes, secrets' redaction,
subprocesses, step logging, atomic files, the repository's place, ``--version``, config
names, README sections and the disk cache. Imports nothing above itself."""
