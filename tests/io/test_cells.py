"""How a cell's text is checked and read (:mod:`nlsim.io.cells`): the edges its examples leave open."""

import pytest

from nlsim.io.cells import (
    describe,
    misread_utf8,
    model_text,
    score_number,
    shown_text,
    spreadsheet_error,
    text_control,
)


def test_a_delete_character_is_a_control_a_text_has_no_use_for():
    assert text_control("Floods\x7f in the north") == "\x7f"


def test_a_newline_is_named_a_line_break_and_a_tab_a_tab():
    assert describe("\n") == "U+000A (a line break for line readers)"
    assert describe("\t") == "U+0009 (a tab)"


def test_an_error_value_followed_by_words_is_a_text():
    assert spreadsheet_error("Err:508 in the budget app") is None
    assert spreadsheet_error("Err:5081") is None


def test_control_characters_at_either_end_are_dropped_not_made_spaces():
    assert model_text("\x00Floods in the north\x0b") == "Floods in the north"
    assert model_text("\u2028 Floods \x85") == "Floods"


def test_the_spaces_around_a_run_of_controls_become_one_space():
    assert model_text("north \x0b kill") == "north kill"
    assert model_text("north\t\x00 \x1c kill") == "north kill"


def test_the_zero_width_joiner_and_non_joiner_are_kept():
    assert model_text("a\u200db\u200cc\u200bd") == "a\u200db\u200ccd"


def test_each_html_comment_is_left_out_alone():
    assert shown_text("<!-- a -->Storm<!-- b --> warning") == "Storm warning"


def test_an_underscore_in_a_score_is_refused():
    with pytest.raises(ValueError, match="underscore"):
        score_number("1_0")


def test_a_decimal_comma_without_a_leading_digit_is_named():
    with pytest.raises(ValueError, match=r"decimal comma\? write it \.75"):
        score_number(",75")


def test_three_characters_beyond_ascii_are_enough_to_be_read_as_misread_utf8():
    # 颱 in UTF-8 is three bytes: as cp1252 they read as three characters
    assert misread_utf8("é¢±") == ("cp1252", "颱")


def test_utf8_misread_as_big5_is_found():
    # 總統 in UTF-8 read as cp950 (Excel on a Traditional-Chinese Windows)
    assert misread_utf8("蝮賜絞") == ("cp950", "總統")
