"""The class archive a quick-start node writes is adopted only whole: a clean exit, a file with content."""

from pathlib import Path

from kraftform.runtime.nodes.class_archive import adopt, dump_options, dump_target, use_options


def test_a_clean_dump_replaces_the_archive_and_a_killed_ones_is_dropped(tmp_path: Path) -> None:
    archive = tmp_path / "classes.jsa"
    target = dump_target(archive, "t1-node-0")
    assert target.parent == tmp_path and target != archive
    target.write_bytes(b"dumped")
    adopt(target, archive, exited_cleanly=False)
    assert not target.exists() and not archive.exists()
    target.write_bytes(b"dumped")
    adopt(target, archive, exited_cleanly=True)
    assert archive.read_bytes() == b"dumped" and not target.exists()
    target.write_bytes(b"")  # a JVM that died before writing anything
    adopt(target, archive, exited_cleanly=True)
    assert archive.read_bytes() == b"dumped" and not target.exists()


def test_dumping_and_mapping_agree_on_the_agent_setting() -> None:
    # The JVM refuses an archive written with another AllowArchivingWithJavaAgent setting.
    agent = "-XX:+AllowArchivingWithJavaAgent"
    assert agent in dump_options(Path("/a.tmp")) and agent in use_options(Path("/a.jsa"))
    assert "-XX:SharedArchiveFile=/a.jsa" in use_options(Path("/a.jsa"))
    assert "-XX:ArchiveClassesAtExit=/a.tmp" in dump_options(Path("/a.tmp"))
