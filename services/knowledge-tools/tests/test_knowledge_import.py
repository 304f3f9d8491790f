"""Importing the server reads no settings and builds nothing: create_app(settings) does."""

from stacgis_common.testing import assert_import_is_inert


def test_import_reads_no_settings() -> None:
    assert_import_is_inert("stacgis_knowledge", "KNOWLEDGE_")
