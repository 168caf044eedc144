"""Staging an upload: regular files only, caps, safe unzip (pure logic, no JAX)."""
import os
import zipfile

from autograder.findings import Finding
from autograder.grading.run import submission


def test_symlinks_and_fifos_are_never_followed(tmp_path):
    secret = tmp_path / "solution.py"
    secret.write_text("SECRET = 1\n")
    up = tmp_path / "upload"
    up.mkdir()
    (up / "add.py").symlink_to(secret)
    (up / "dir").symlink_to(tmp_path)
    os.mkfifo(up / "pipe")
    (up / "helper.py").write_text("x = 1\n")
    staged = submission.stage(up, tmp_path / "copy")
    assert sorted(p.name for p in staged.root.iterdir()) == ["helper.py"]
    assert any(s.startswith("add.py (a symbolic link") for s in staged.skipped)
    assert any(s.startswith("dir (a symbolic link") for s in staged.skipped)
    assert any(s.startswith("pipe (not a regular file") for s in staged.skipped)
    loc, _ = submission.prepare(up, "add.py", tmp_path / "work")
    assert isinstance(loc, Finding) and loc.facts()["problem"] == "file-missing"
    assert "add.py (a symbolic link; not followed)" in loc.facts()["uploaded"]


def test_a_symlinked_single_file_is_not_read(tmp_path):
    secret = tmp_path / "solution.py"
    secret.write_text("SECRET = 1\n")
    (tmp_path / "add.py").symlink_to(secret)
    loc, skipped = submission.prepare(tmp_path / "add.py", "add.py", tmp_path / "work")
    assert isinstance(loc, Finding) and skipped == ["add.py (a symbolic link; not followed)"]


def test_file_count_and_size_caps(tmp_path, monkeypatch):
    monkeypatch.setattr(submission, "MAX_FILES", 5)
    up = tmp_path / "upload"
    up.mkdir()
    for i in range(20):
        (up / f"f{i:02d}.txt").write_text("x")
    with open(up / "big.bin", "wb") as f:
        f.truncate(submission.MAX_FILE_BYTES + 1)
    staged = submission.stage(up, tmp_path / "copy")
    assert len(list(staged.root.iterdir())) == 5
    assert any("big.bin" in s and "not copied" in s for s in staged.skipped)
    assert staged.skipped[-1].startswith("more files")


def test_a_zip_is_unpacked_without_escaping(tmp_path):
    up = tmp_path / "upload"
    up.mkdir()
    with zipfile.ZipFile(up / "work.zip", "w") as zf:
        zf.writestr("proj/add.py", "def add(x, y):\n    return x\n")
        zf.writestr("../../escaped.py", "x = 1\n")
        zf.writestr("/tmp/absolute.py", "x = 1\n")
    work = tmp_path / "work"
    loc, skipped = submission.prepare(up, "add.py", work)
    assert isinstance(loc, submission.Located)
    assert loc.uploaded_as == "work.zip/proj/add.py"
    assert loc.module_dir == loc.module_file.parent      # its helpers are importable
    assert not (tmp_path / "escaped.py").exists() and not (work / "escaped.py").exists()
    assert sum("unsafe path" in s for s in skipped) == 2


def test_a_broken_zip_is_a_finding(tmp_path):
    up = tmp_path / "upload"
    up.mkdir()
    (up / "work.zip").write_bytes(b"PK\x03\x04 not really a zip")
    loc, _ = submission.prepare(up, "add.py", tmp_path / "work")
    assert isinstance(loc, Finding) and loc.facts()["problem"] == "bad-zip"
