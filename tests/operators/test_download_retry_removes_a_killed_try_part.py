"""A download try killed outright (SIGKILL: no cleanup runs) leaves its ``.part`` beside the target; the retry on the
same host removes it, and never a part whose writer still lives (destinations/_atomic.py). A soak found one left: the
"SIGKILL a busy worker" operation landed while a download was writing, and its retry wrote a part of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from airflow_provider_analytics.destinations._atomic import host_mark, write_atomically


def a_finished_process_id() -> int:
    """The id of a process that has exited (the writer that was killed)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    return int(done.stdout)


def test_a_retry_removes_the_part_its_killed_try_left_and_keeps_the_parts_of_the_living(tmp_path: Path) -> None:
    target = tmp_path / "Sales and 1 more report.csv"
    dead = tmp_path / f".{target.name}.{host_mark()}-{a_finished_process_id()}-0123456789abcdef.part"
    living = tmp_path / f".{target.name}.{host_mark()}-{os.getpid()}-fedcba9876543210.part"
    elsewhere = tmp_path / f".{target.name}.{'0' * 8}-1-aaaaaaaaaaaaaaaa.part"  # another host's: its writer unknown
    other_target = tmp_path / f".other.csv.{host_mark()}-{a_finished_process_id()}-bbbbbbbbbbbbbbbb.part"
    for path in (dead, living, elsewhere, other_target):
        path.write_bytes(b"half a report")

    assert write_atomically(target, lambda out: out.write(b"the whole report")) == len(b"the whole report")

    assert target.read_bytes() == b"the whole report"
    assert not dead.exists()
    assert living.exists()
    assert elsewhere.exists()
    assert other_target.exists(), "only the target's own parts are looked at"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [target.name, living.name, elsewhere.name, other_target.name]
    )


def test_a_planted_link_named_like_a_dead_writers_part_is_removed_not_followed(tmp_path: Path) -> None:
    kept = tmp_path / "precious.txt"
    kept.write_bytes(b"not a part")
    target = tmp_path / "report.csv"
    link = tmp_path / f".{target.name}.{host_mark()}-{a_finished_process_id()}-0123456789abcdef.part"
    link.symlink_to(kept)

    write_atomically(target, lambda out: out.write(b"x"))

    assert not link.is_symlink()
    assert kept.read_bytes() == b"not a part"
