"""htc_core.atomic: outputs replace the previous file only when complete."""

from __future__ import annotations

import os

import pytest

from htc_core.atomic import OutputError, atomic_open, check_writable, write_text


def test_replaces_only_on_success_and_keeps_the_mode(tmp_path):
    p = tmp_path / "out.txt"
    p.write_text("old\n")
    os.chmod(p, 0o640)
    with pytest.raises(KeyboardInterrupt):
        with atomic_open(p) as fh:
            fh.write("half of the new con")
            raise KeyboardInterrupt   # Ctrl-C half-way
    assert p.read_text() == "old\n" and os.listdir(tmp_path) == ["out.txt"]
    write_text(p, "new\n")
    assert p.read_text() == "new\n" and (p.stat().st_mode & 0o777) == 0o640


def test_new_file_gets_the_umask_mode_and_its_folder(tmp_path):
    p = write_text(tmp_path / "a" / "b" / "new.txt", "x")
    umask = os.umask(0)
    os.umask(umask)
    assert p.read_text() == "x" and (p.stat().st_mode & 0o777) == (0o666 & ~umask)


def test_check_writable_says_why(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(OutputError, match="is a directory"):
        check_writable(tmp_path)
    with pytest.raises(OutputError, match="cannot write"):
        check_writable(tmp_path / "f" / "x.csv")     # its folder is a file
    assert check_writable(tmp_path / "ok.csv") == tmp_path / "ok.csv" and not (tmp_path / "ok.csv").exists()
    with pytest.raises(ValueError, match="mode"):
        with atomic_open(tmp_path / "x", "a"):
            pass
