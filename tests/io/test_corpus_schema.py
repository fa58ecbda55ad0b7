"""The corpus schema's checks of a run's settings and of a file's column names (nlsim.io.corpus_schema)."""

import pytest

from nlsim.dedup.config import DedupConfig
from nlsim.errors import ConfigError
from nlsim.io.corpus import load_corpus
from nlsim.io.corpus_schema import machine_zone, zone_problem


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        (",", "give at least one field, e.g. title,description"),
        ("title,source", "cannot embed field 'source'; choose from title, description, body"),
        ("title,title", "'title' is given twice"),
    ],
)
def test_text_fields_that_cannot_be_embedded_are_refused_before_any_work(fields, said):
    """``--text-fields`` with no field in it, a field that is no text to embed, or one given twice is refused
    when the run's settings are read, naming the option."""
    with pytest.raises(ConfigError, match=f"--text-fields: {said}"):
        DedupConfig.of(corpus="news.csv", out="out", threshold=0.9, text_fields=fields)


@pytest.mark.parametrize(
    ("zone", "said"),
    [
        (" UTC+8", " (an offset, not a time zone: "),  # a space copied in with the value
        ("utc+8", " (an offset, not a time zone: "),  # an offset in lower case is an offset too
        ("[ Europe/London ]", "; the zone in its brackets is: Europe/London"),
        ("[UTC0", " (e.g. Asia/Taipei, UTC)"),  # a bracket left open holds no zone
    ],
)
def test_a_time_zone_name_that_is_no_zone_is_refused_naming_what_to_give(zone, said):
    """An offset with a space before it or in lower case is said to be an offset, the zone in brackets with
    spaces inside them is named, and a bracket left open is no zone in brackets."""
    problem = zone_problem(zone)
    assert problem is not None and problem.startswith(f"--timezone {zone!r}: not a time zone name{said}")


@pytest.mark.parametrize(
    ("tz", "zone"),
    [
        (":Asia/Taipei", "Asia/Taipei"),
        ("/usr/share/zoneinfo/Asia/Taipei", "Asia/Taipei"),
        ("localtime", None),
    ],
)
def test_the_machines_zone_is_read_from_tz_as_the_c_library_reads_it(monkeypatch, tz, zone):
    """``TZ=:Asia/Taipei`` (the C library's leading colon) names Asia/Taipei; ``TZ=localtime`` names no place,
    so the zone the machine is set to cannot be told from it (a run told to give ``--timezone localtime``
    would be refused again)."""
    monkeypatch.setenv("TZ", tz)
    assert machine_zone() == zone


@pytest.mark.parametrize("column", [" pub_date", "pub.date", "Pub-Date"])
def test_a_lookalike_column_written_with_a_space_dot_or_dash_is_named_in_a_warning(tmp_path, column):
    """A column that looks like ``published_at`` once its leading space, dots and dashes are read as a header
    row writes them (``id, title, pub_date``, ``pub.date``) is kept and not read, and the load says so."""
    path = tmp_path / "news.csv"
    path.write_text(f"id,title,{column}\n1,Floods,2024-05-01T10:00Z\n", encoding="utf-8")
    (warning,) = load_corpus(path).warnings
    assert f"column {column!r} is not read: it looks like the schema field 'published_at'" in warning
