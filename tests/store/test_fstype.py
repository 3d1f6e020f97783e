"""Tests of clusterbench.store.fstype: is a path on a shared (network or cluster) file system?."""

from __future__ import annotations

import pytest

from clusterbench.store import fstype

MOUNTINFO = """\
22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:35 / /shared rw,relatime shared:20 - nfs4 fs1:/export rw,vers=4.2
41 22 0:36 / /lustre rw - lustre 10.0.0.1@o2ib:/lfs rw
42 22 0:37 / /gpfs/fs1 rw - gpfs fs1 rw
43 22 0:38 / /mnt/beegfs rw - beegfs beegfs_nodev rw
44 22 0:39 / /mnt/win rw - cifs //srv/share rw
45 40 0:40 / /shared/local rw - tmpfs tmpfs rw
46 22 0:41 / /mnt/with\\040space rw - nfs fs2:/x rw
"""


def _no_statfs(path):
    raise OSError(38, "Function not implemented")


@pytest.mark.parametrize("path,expected", [
    ("/shared/cb/results.db", "nfs"), ("/lustre/u/r.db", "lustre"), ("/gpfs/fs1/r.db", "gpfs"),
    ("/mnt/beegfs/r.db", "beegfs"), ("/mnt/win/r.db", "cifs"), ("/mnt/with space/r.db", "nfs"),
    ("/shared/local/r.db", None), ("/home/u/r.db", None), ("/sharedx/r.db", None),
])
def test_shared_fs_from_mountinfo(path, expected):
    assert fstype.shared_fs(path, statfs=_no_statfs, mountinfo=MOUNTINFO) == expected


@pytest.mark.parametrize("magic,expected", [
    (0x6969, "nfs"), (0x0BD00BD0, "lustre"), (0x47504653, "gpfs"), (0x19830326, "beegfs"),
    (0xFF534D42, "cifs"), (0xFE534D42, "smb2"), (0xEF53, None), (0x01021994, None),
])
def test_shared_fs_from_statfs(magic, expected, tmp_path):
    # statfs answers first; mountinfo (claiming nfs everywhere) is not consulted
    assert fstype.shared_fs(tmp_path / "new" / "r.db", statfs=lambda p: magic,
                            mountinfo="1 0 0:1 / / rw - nfs x rw") == expected


def test_real_statfs_here(tmp_path):
    assert fstype.statfs_magic(str(tmp_path)) > 0
    assert fstype.shared_fs(tmp_path / "r.db") is None  # tests do not run on a network fs
