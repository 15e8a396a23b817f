"""The Spark-free parts of the DataFrame functions: the incremental checkpoint file, the
API detection and its errors, the version matrix's choice of releases."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from pyspark_kafkalite import capabilities
from pyspark_kafkalite.checkpoint import FILE_NAME, OffsetsFile

from kafkalite.errors import ConfigError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "spark_matrix"))
import matrix


def test_checkpoint_plans_then_commits_and_a_replan_keeps_the_batch(tmp_path: Path) -> None:
    store = OffsetsFile(tmp_path / "cp")
    state = store.load()
    assert (state.committed, state.planned, state.next_batch) == (None, None, 0)
    store.plan(0, {("t", 0): 0}, {("t", 0): 10})
    planned = store.load().planned
    assert planned is not None and (planned.batch, planned.start, planned.end) == (0, {("t", 0): 0}, {("t", 0): 10})
    store.commit(0, {("t", 0): 10})
    state = store.load()
    assert (state.committed_batch, state.committed, state.planned, state.next_batch) == (0, {("t", 0): 10}, None, 1)
    with pytest.raises(ConfigError, match="cannot commit batch 0 .* it has nothing planned"):
        store.commit(0, {("t", 0): 10})
    on_disk = json.loads((tmp_path / "cp" / FILE_NAME).read_text())
    assert on_disk == {"version": 1, "committed": {"batch": 0, "offsets": {"t": {"0": 10}}}, "planned": None}
    assert [p.name for p in (tmp_path / "cp").iterdir()] == [FILE_NAME]  # no temporary file left


def test_checkpoint_refuses_files_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_text('{"version": 7}')
    with pytest.raises(ConfigError, match="format version 7"):
        OffsetsFile(tmp_path).load()
    (tmp_path / FILE_NAME).write_text('{"version": 1, "committed": {"offsets": {}}}')
    with pytest.raises(ConfigError, match="is not a kafkalite offsets file"):
        OffsetsFile(tmp_path).load()
    with pytest.raises(ConfigError, match="must be a directory path"):
        OffsetsFile("  ")


def test_the_data_source_api_is_found_by_import_not_by_version(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyspark

    monkeypatch.setattr(pyspark, "__version__", "3.5.1")
    assert capabilities.has_datasource_api()  # this PySpark has the API, whatever it says its version is
    capabilities.require_streaming_reads("x")
    monkeypatch.setitem(sys.modules, "pyspark.sql.datasource", None)  # as on open-source 3.5: not importable
    assert not capabilities.has_datasource_api()
    with pytest.raises(ConfigError, match=r"x needs a streaming read .* PySpark 3\.5\.1 .* Spark 4\.0.*"
                                          r"read_kafka_incremental.*format\('kafka'\)"):
        capabilities.require_streaming_reads("x")
    with pytest.raises(ConfigError, match=r"option 'maxBytesPerTrigger' .* needs Spark 4\.0 or later \(this is "
                                          r"PySpark 3\.5\.1"):
        capabilities.refuse_streaming_read_options({"maxbytespertrigger": "10"}, "read_kafka")
    with pytest.raises(ImportError, match=r"needs Spark's Python Data Source API, which PySpark 3\.5\.1 lacks"):
        from pyspark_kafkalite import KafkaLiteDataSource  # noqa: F401


def test_the_matrix_picks_the_newest_patch_of_each_minor_and_the_tests_a_release_can_run() -> None:
    assert matrix.newest_of_each_minor(["4.0.1", "3.5.9", "4.0.0", "3.5.10", "4.3.0"]) == ["3.5.10", "4.0.1", "4.3.0"]
    assert matrix.pytest_command(Path("py"), [], "3.5.9")[3:6] == list(matrix.EVERY_RELEASE_TESTS)
    assert matrix.pytest_command(Path("py"), [], "4.0.0")[3] == "tests/spark"
