"""Run packages' tests for foreign Linux architectures under QEMU user emulation.

One module per concern:

- ``arch``: the architectures we emulate and their default CPU settings.
- ``host``: the machine's prerequisites (root, qemu-user-static, debootstrap,
  binfmt_misc mounted and the QEMU interpreter registered).
- ``mounts``: mounts that are always undone, even on Ctrl-C or SIGTERM.
- ``rootfs``: the Debian root filesystem, built once with debootstrap and cached.
- ``chroot``: a prepared chroot session (/proc, /dev, a minimal /sys, DNS, CA bundle).
- ``install``: what to install (wheels, conda packages, requirements) and how.
- ``runner``: one test run per CPU setting, with QEMU_CPU.
- ``report``: the per-setting table and its JSON form.
- ``emulation``: the run from start to end, driven by ``tools/commands/emulate.py``.
"""
