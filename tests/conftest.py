from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
NO_CORPUS = f"real Kafka corpus not found at {CORPUS} (../shared/corpus beside the repo)"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=NO_CORPUS)


def corpus_params(paths: list) -> list:
    """Parameters for a test over corpus files: a single skipped one, saying why, without a corpus."""
    if not CORPUS.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=NO_CORPUS))]
    return paths


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(NO_CORPUS)
    return CORPUS


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole run; skipped, saying why, without pyspark or Java."""
    from metashell.export.spark_session import ExportError, get_spark

    try:
        session = get_spark()
    except ExportError as exc:
        pytest.skip(str(exc))
    yield session
    session.stop()
