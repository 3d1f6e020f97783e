"""These trees copy sysfs, symlink loops included (``net/<if>/device`` points back at the PCI
device that holds ``net/``): pytest must not walk into them looking for tests."""

collect_ignore_glob = ["*"]
