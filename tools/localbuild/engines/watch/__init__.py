"""Watching a build: its output as timestamped, redacted log lines (``logtee``) and a quiet
status line on screen (``progress``)."""
