import pytest

from nlsim.conversion import MODES, convert
from nlsim.errors import ConfigError


def test_modes_listed():
    assert set(MODES) == {"none", "s2t", "t2s", "s2twp", "tw2sp"}


def test_phrase_conversion_both_ways():
    assert convert(["鼠标和软件，信息"], "s2twp") == ["滑鼠和軟體，資訊"]
    assert convert(["滑鼠和軟體，資訊"], "tw2sp") == ["鼠标和软件，信息"]
    assert convert(["汉字"], "s2t") == ["漢字"]
    assert convert(["漢字"], "t2s") == ["汉字"]


def test_none_keeps_text_and_english_passes_through():
    assert convert(["軟體 update"], "none") == ["軟體 update"]
    assert convert(["Floods hit the north"], "tw2sp") == ["Floods hit the north"]


def test_real_opencc_mistake_in_corpus_is_undone_by_tw2sp():
    # s2twp turns 基金发行 into 基金髮行 (the phrase 金发 wins); converting back repairs it.
    assert convert(["基金发行"], "s2twp") == ["基金髮行"]
    assert convert(["基金髮行"], "tw2sp") == ["基金发行"]


def test_round_trip_is_not_identity():
    # 台 becomes 臺 in Traditional; the round trip through Simplified gives 台 back, not the Traditional input
    assert convert(["臺灣"], "tw2sp") == ["台湾"]
    assert convert(convert(["台湾"], "s2twp"), "tw2sp") == ["台湾"]


def test_unknown_mode():
    with pytest.raises(ConfigError, match="unknown conversion mode 'x2y'"):
        convert(["a"], "x2y")


@pytest.mark.parametrize("mode", MODES)
def test_a_nul_in_a_text_does_not_cut_what_follows_it(mode):
    """A NUL a bad export left in a headline: OpenCC's tw2sp and s2twp stopped at it, so two different
    headlines that began alike were embedded as one text and grouped as exact copies."""
    from nlsim.clusters.copies import copy_key

    texts = ["颱風\x00登陸花蓮 停班停課", "颱風\x00海葵來襲 台北停課"]
    out = convert(texts, mode)
    assert [t.split("\x00")[1] for t in out] == convert([t.split("\x00")[1] for t in texts], mode)
    assert copy_key(out[0]) != copy_key(out[1])


def test_none_returns_a_new_list_of_the_texts():
    """``none`` gives a list of its own, as every other mode does: not the caller's sequence itself, which a
    caller that appends to or changes what it got back would change too, and not a tuple given in."""
    texts = ["軟體", "update"]
    out = convert(texts, "none")
    assert out == texts and out is not texts
    assert convert(("軟體", "update"), "none") == ["軟體", "update"]


def test_the_default_mode_brings_taiwan_traditional_to_simplified():
    assert convert(["滑鼠和軟體，資訊"]) == ["鼠标和软件，信息"]
