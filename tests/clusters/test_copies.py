"""Exact copies (nlsim.clusters.copies): found before the search, one item for the cluster rule."""

import pandas as pd

from nlsim.clusters.constraints import LinkConstraints
from nlsim.clusters.copies import MAX_LABELS, copy_key, find_copies
from nlsim.clusters.rules import ConnectedComponents, Link, SharedSupport


def test_a_key_ignores_case_width_space_and_punctuation_but_not_words_or_numbers():
    assert copy_key("Rain in Taipei.") == copy_key("  RAIN  in taipei ")
    assert copy_key("ＡＢＣ１２３") == copy_key("abc123")  # full-width forms (NFKC)
    assert copy_key("「颱風」來了！") == copy_key("颱風來了")
    assert copy_key("Q3 profit") != copy_key("Q4 profit")
    assert copy_key("上漲0.67%") != copy_key("上漲0.68%")
    assert copy_key(" ... ") == ""


def test_a_key_ignores_the_characters_that_show_nothing_whatever_their_category():
    """A Hangul filler (a letter), the blank Braille cell (a symbol), a variation selector or a combining
    grapheme joiner (marks) show nothing, as a zero-width space does: a copy with one is still a copy."""
    plain = copy_key("\u26a0 Typhoon Gaemi to make landfall tonight")
    for ch in ("\u3164", "\uffa0", "\u115f", "\u2800", "\ufe0f", "\u034f", "\U000e0100", "\u200b"):
        assert copy_key(f"\u26a0{ch} Typhoon Gaemi to make landfall tonight{ch}") == plain, f"U+{ord(ch):04X}"
    assert copy_key("\u3164\u2800\ufe0f") == ""


def test_a_mark_between_two_digits_is_part_of_the_number():
    """``1.5%`` and ``15%`` are two figures (one month's growth a year apart from another's), ``2-1`` and
    ``21`` two scores: the key dropped the point and the hyphen, and made them copies. The mark stays, one
    for any (a comma, a full-width point, a space), and marks elsewhere still go."""
    assert copy_key("TSMC revenue up 1.5%") != copy_key("TSMC revenue up 15%")
    assert copy_key("營收年增1.5%") != copy_key("營收年增15%")
    assert copy_key("Arsenal 2-1 Spurs") != copy_key("Arsenal 21 Spurs")
    assert copy_key("營收年增1.5%") == copy_key("營收年增 １．５ ％") == copy_key("營收年增1,5%")
    assert copy_key("up 1\u200b5%") == copy_key("up 15%")  # a zero-width space shows nothing
    assert copy_key("Rain, 15 dead.") == copy_key("rain 15 dead")


def test_a_thousands_separator_is_not_part_of_the_number():
    """A wire's ``3,000`` and a CMS's ``3000`` (or ``3 000``, ``3'000``, a full-width ``３，０００``) are one
    figure, and the headlines copies, as they were before a mark between two digits was kept; a decimal
    point, a date's or a score's mark still tells two numbers apart."""
    plain = copy_key("Typhoon cuts power to 3000 homes")
    for figure in ("3,000", "3 000", "3\u202f000", "3'000", "3\u2019000", "３，０００", "3.000"):
        assert copy_key(f"Typhoon cuts power to {figure} homes") == plain, figure
    assert copy_key("1,234,567 voters") == copy_key("1234567 voters") == copy_key("1 234 567 voters")
    assert copy_key("台電：3,000戶停電") == copy_key("台電：3000戶停電")
    assert copy_key("up 1.5%") != copy_key("up 15%") and copy_key("up 1.25%") != copy_key("up 125%")
    assert copy_key("Arsenal 2-100") != copy_key("Arsenal 2100")  # a hyphen groups no digits
    assert copy_key("On 2024-05-01") != copy_key("On 20240501")
    assert copy_key("12345,678") != copy_key("12345678")  # no group of at most three before it


def test_html_a_cms_left_in_a_text_is_read_as_the_text_a_page_shows():
    """A CMS that leaves its markup in a headline (``AT&amp;T``, ``&#163;1.8m`` as in the bundled BBC
    corpus, ``&nbsp;``, ``<b>Storm</b>``, a ``<br/>``) sends the same headline as a wire that does not: the
    key reads a character reference as its character and leaves an HTML element's tags out, so the two are
    copies; a ``<`` or ``&`` that is no markup is text, and other words are still other texts."""
    assert copy_key("AT&amp;T shares fall") == copy_key("AT&T shares fall")
    assert copy_key("&#163;1.8m indecency fine for Viacom") == copy_key("£1.8m indecency fine for Viacom")
    assert copy_key("Biden&#39;s plan&#x2014;and &ldquo;why&rdquo;") == copy_key("Biden's plan - and why")
    assert copy_key("Storm&nbsp;hits&nbsp;coast") == copy_key("Storm hits coast")
    assert copy_key("AT&amp;amp;T") == copy_key("AT&T")  # escaped twice
    assert copy_key("<b>Storm</b> warning for the <A HREF='x'>east</a> coast<br/>") == copy_key(
        "Storm warning for the east coast"
    )
    assert copy_key("&lt;b&gt;Storm&lt;/b&gt; warning") == copy_key("Storm warning")
    assert copy_key("5 &lt; 6") == copy_key("5 < 6") != copy_key("5 6")
    assert copy_key("P&G&#39;s R&D") == copy_key("P&G's R&D")
    assert copy_key("Sales <b>up</b> 3<br>000") == copy_key("Sales up 3000")
    assert copy_key("<b>Storm</b> warning") != copy_key("<b>Rain</b> warning")
    assert copy_key("Fans <3 the <Reuters> feed") == "fans<3the<reuters>feed"  # no HTML element


def test_a_minus_sign_is_the_hyphen_it_stands_for():
    """A typographer's minus sign U+2212 (``Nasdaq −2%``, as some CMSs set a figure) is the hyphen-minus a
    wire writes (``Nasdaq -2%``): the two were no copies, though the key reads a score's ``2-1`` as
    ``2.1``; it reads the minus sign as the hyphen, and a plus still tells a rise."""
    assert copy_key("Nasdaq \u22122% as tech slides") == copy_key("Nasdaq -2% as tech slides")
    assert copy_key("Arsenal 2\u22121 Spurs") == copy_key("Arsenal 2-1 Spurs") != copy_key("Arsenal 21 Spurs")
    assert copy_key("Nasdaq \u22122%") != copy_key("Nasdaq +2%")


def test_texts_without_words_are_nobodys_copies():
    found = find_copies(["a", "b", "c"], ["...", "!!", "--"])
    assert found.count == 0 and found.groups() == []


def test_the_earliest_copy_leads_its_group_and_undated_ones_follow():
    times = pd.to_datetime(["2024-05-02", None, "2024-05-01", "2024-05-03"], utc=True)
    found = find_copies(["late", "undated", "early", "other"], ["x", "x", "x", "y"], times)
    assert found.groups() == [["early", "late", "undated"]]
    assert found.rep_of() == {"late": "early", "undated": "early"}
    assert found.count == 2


def test_copies_further_apart_than_the_time_window_are_not_copies():
    times = pd.to_datetime(["2024-05-01 00:00", "2024-05-01 20:00", "2024-05-03 00:00"], utc=True)
    assert find_copies(["a", "b", "c"], ["x"] * 3, times).groups() == [["a", "b", "c"]]
    assert find_copies(["a", "b", "c"], ["x"] * 3, times, window_hours=24).groups() == [["a", "b"]]


def test_an_editors_not_the_same_story_keeps_two_copies_apart():
    found = find_copies(["a", "b", "c", "d"], ["x"] * 4, cannot=[("a", "c")])
    assert found.groups() == [["a", "b", "d"]]  # c alone: apart from a, so in a group of its own
    assert "c" not in found.rep_of()


def test_pairs_link_each_copy_to_its_representative_smaller_row_first():
    found = find_copies(["b", "a", "c"], ["x", "x", "x"], pd.to_datetime(["2024-01-02"] * 3, utc=True))
    a, b = found.pairs()
    assert sorted(zip(a.tolist(), b.tolist(), strict=True)) == [
        (0, 1),
        (1, 2),
    ]  # "a" (row 1) leads: ties by id
    a, b = found.pairs(rows=[2])
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == [(1, 2)]


def _many_copies(n: int) -> tuple[list[Link], dict[str, str]]:
    """n copies linked as a 10-nearest-neighbour search links them (every copy ties at the top, and the
    search gives each the same first rows), plus two other items."""
    ids = [f"c{i:04d}" for i in range(n)]
    links = [Link(ids[i], ids[j], 1.0) for i in range(n) for j in range(11) if i != j]
    links += [Link(ids[0], "other", 0.93), Link("other", "third", 0.95)]
    found = find_copies([*ids, "other", "third"], ["same"] * n + ["o", "t"])
    return links, found.rep_of()


def test_without_copies_the_support_rule_leaves_most_of_many_copies_out():
    links, _ = _many_copies(150)
    grouped = {i for g in SharedSupport(min_share=0.4).clusters(links) for i in g if i.startswith("c")}
    assert len(grouped) < 50  # what an editor saw: most copies in no cluster


def test_every_copy_joins_its_representatives_cluster_under_each_rule():
    links, rep_of = _many_copies(150)
    for rule in (SharedSupport(min_share=0.4), ConnectedComponents()):
        clusters = rule.clusters(links, copies=rep_of)
        holding = [g for g in clusters if "c0000" in g]
        assert len(holding) == 1 and sum(m.startswith("c") for m in holding[0]) == 150, rule.name


def test_a_copy_group_linked_to_nothing_is_a_cluster_of_its_own():
    rep_of = find_copies(["a", "b", "c", "x", "y"], ["s", "s", "s", "p", "q"]).rep_of()
    assert SharedSupport(min_share=0.4).clusters([Link("x", "y", 0.9)], copies=rep_of) == [
        ["a", "b", "c"],
        ["x", "y"],
    ]


def test_a_cannot_link_between_a_copy_and_another_item_keeps_the_whole_group_apart():
    rep_of = find_copies(["a", "b", "x"], ["s", "s", "p"]).rep_of()
    links = [Link("a", "x", 0.95), Link("b", "x", 0.95)]
    clusters = ConnectedComponents().clusters(links, LinkConstraints.from_pairs(cannot=[("b", "x")]), rep_of)
    assert clusters == [["a", "b"]]


def test_a_group_of_copies_weighs_in_the_support_rule_as_its_copies_would():
    """A bridge x links to the three copies of story A and the two of story B: x joins A (it links to all
    of A's items), and A with x stays apart from B (2 of the 8 item pairs between them are linked, below
    0.4), read with the copies grouped or not."""
    a, b = ["a1", "a2", "a3"], ["b1", "b2"]
    links = [Link(x, y, 1.0) for g in (a, b) for i, x in enumerate(g) for y in g[i + 1 :]]
    links += [Link("x", m, 0.9) for m in a + b]
    rule = SharedSupport(min_share=0.4)
    rep_of = find_copies([*a, *b, "x"], ["A", "A", "A", "B", "B", "X"]).rep_of()
    assert (
        rule.clusters(links) == rule.clusters(links, copies=rep_of) == [["a1", "a2", "a3", "x"], ["b1", "b2"]]
    )


def _work(ids: list[str], texts: list[str], times: object, **kw: object) -> tuple[object, int]:
    """``find_copies``'s result and the lines of ``nlsim/clusters/copies.py`` it ran (a count that does not
    depend on the machine's speed)."""
    import sys

    import nlsim.clusters.copies as module

    lines = 0

    def trace(frame, event, arg):  # noqa: ANN001, ANN202 - sys.settrace's signature
        nonlocal lines
        if frame.f_code.co_filename != module.__file__:
            return None
        if event == "line":
            lines += 1
        return trace

    before = sys.gettrace()
    sys.settrace(trace)
    try:
        found = find_copies(ids, texts, times, **kw)
    finally:
        sys.settrace(before)
    return found, lines


def _republished(n: int) -> tuple[list[str], list[str], pd.DatetimeIndex]:
    """``n`` copies of one wire story a minute apart, the last one undated, and one other item."""
    ids = [f"w{i:04d}" for i in range(n)] + ["other"]
    texts = ["(圖)"] * n + ["Rain in Taipei"]
    minutes = pd.to_timedelta(range(n + 1), unit="min")
    times = pd.to_datetime(["2024-05-01"] * (n + 1), utc=True) + minutes
    return ids, texts, times.where([i != n - 1 for i in range(n + 1)])


def test_hundreds_of_copies_of_one_text_are_one_group_found_in_work_linear_in_the_copies():
    """3,000 copies of one headline (a wire story republished, a boilerplate title such as "(圖)") were
    each compared with every member of their group, 4.5 million comparisons: the work grew with the square
    of the copies. It grows with the copies now, and the groups are those they were."""
    ids, texts, times = _republished(400)
    found, small = _work(ids[:101] + ids[-1:], texts[:101] + texts[-1:], times[:101].append(times[-1:]))
    assert found.groups() == [ids[:101]]
    found, large = _work(ids, texts, times, cannot=[("w0001", "w0002"), ("w0003", "w0399")])
    assert large < 6 * small, (small, large)  # 4 times the copies: about 4 times the work, not 16
    rep = found.rep_of()
    assert found.groups() == [[i for i in ids[:-1] if i not in ("w0002", "w0399")], ["w0002", "w0399"]]
    assert rep["w0399"] == "w0002"  # the undated copy, kept apart from w0003: in the first part it fits
    assert found.parted.tolist() == [0, 2]
    # a 1-hour window cuts them into parts of 61 minutes' copies (the undated one with the first part)
    found, windowed = _work(ids, texts, times, window_hours=1)
    assert windowed < 6 * small, (small, windowed)
    parts = found.groups()
    assert [len(p) for p in parts] == [62, *[61] * 5, 33]
    assert parts[0][:2] == ["w0000", "w0001"] and "w0399" in parts[0] and parts[1][0] == "w0061"


def _first_fitting_part(ids: list[str], texts: list[str], times: pd.DatetimeIndex, hours, cannot):  # noqa: ANN001, ANN202
    """The definition of the copy groups, spelt out member by member: in the order rule's order, each copy
    joins the first part whose first member it is within ``hours`` of (either undated: within) and none of
    whose members an editor keeps apart from it. Returns each row's representative and the parted rows."""
    from nlsim.clusters.copies import copy_key
    from nlsim.clusters.order import order_keys

    keys = order_keys(ids, times)
    apart = {frozenset(p) for p in cannot}
    rep, parted = list(range(len(ids))), []
    for key in {copy_key(t) for t in texts} - {""}:
        rows = sorted((r for r, t in enumerate(texts) if copy_key(t) == key), key=lambda r: keys[ids[r]])
        parts: list[list[int]] = []
        for r in rows:
            for part in parts:
                first, mine = keys[ids[part[0]]], keys[ids[r]]
                far = hours and not first.undated and not mine.undated and mine.ns - first.ns > hours * 3600e9
                if not far and not any(frozenset((ids[r], ids[m])) in apart for m in part):
                    part.append(r)
                    break
            else:
                parts.append([r])
        for part in parts:
            for r in part:
                rep[r] = part[0]
        if len(parts) > 1 and any(frozenset((ids[a], ids[b])) in apart for a in rows for b in rows):
            parted += [part[0] for part in parts]
    return rep, sorted(parted)


def test_the_copy_groups_are_those_of_their_definition_on_random_corpora():
    import random

    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(2, 14)
        ids = [f"i{r:02d}" for r in range(n)]
        texts = [rng.choice(["Rain", "rain.", "Sun", "..."]) for _ in range(n)]
        stamps = [None if rng.random() < 0.2 else f"2024-05-01 {rng.randint(0, 9):02d}:00" for _ in ids]
        times = pd.to_datetime(stamps, utc=True)
        cannot = [tuple(rng.sample(ids, 2)) for _ in range(rng.randint(0, 3))]
        window = rng.choice([None, 1, 2, 5])
        found = find_copies(ids, texts, times, window_hours=window, cannot=cannot)
        rep, parted = _first_fitting_part(ids, texts, times, window, cannot)
        assert (found.rep.tolist(), found.parted.tolist()) == (rep, parted), (texts, stamps, window, cannot)


def test_a_flash_label_before_a_headline_is_no_part_of_its_copy():
    """A wire story goes out as sent and, at some desks, with a flash label before it (``【快訊】``,
    ``快訊／``, ``[Breaking]``, ``BREAKING:``, ``UPDATE 1-``): the same text, one copy group. A label that
    is the whole headline, one inside it, or a word that only starts like one stays."""
    plain = copy_key("颱風山陀兒逼近，高雄停班停課")
    for label in ("【快訊】", "【獨家】", "【最新】", "快訊／", "快訊：", "〔快訊〕", "[快訊] ", "（快訊）"):
        assert copy_key(f"{label}颱風山陀兒逼近，高雄停班停課") == plain, label
    english = copy_key("Typhoon Krathon nears Kaohsiung")
    for label in ("[Breaking] ", "BREAKING: ", "Breaking - ", "UPDATE 1-", "UPDATE 2 - ", "EXCLUSIVE-"):
        assert copy_key(f"{label}Typhoon Krathon nears Kaohsiung") == english, label
    assert copy_key("【快訊】") == copy_key("快訊") != ""
    assert copy_key("高雄快訊：停班停課") != copy_key("高雄停班停課")
    assert copy_key("Breaking Bad star dies") != copy_key("Bad star dies")
    assert copy_key("Update your phone now") != copy_key("your phone now")
    assert copy_key("獨家專訪總統") != copy_key("專訪總統")


def test_the_copies_of_a_wire_story_some_sent_with_a_flash_label_are_one_group():
    story = "颱風山陀兒逼近，高雄停班停課"
    texts = [story] * 3 + [f"【快訊】{story}"] * 2 + ["颱風山陀兒遠離"]
    found = find_copies([f"w{i}" for i in range(6)], texts)
    assert found.groups() == [["w0", "w1", "w2", "w3", "w4"]]


def test_a_tilde_or_a_bar_is_a_mark_as_a_wave_dash_or_a_slash_is():
    """A full-width tilde reads as ``~`` and a full-width bar as ``|`` after NFKC, two symbols, not marks: a
    headline closed with ``～`` was no copy of the one closed with the wave dash ``〜`` or of the plain one,
    and ``X｜中央社`` none of ``X／中央社``. They are marks now; ``+``, ``=``, ``<`` still count."""
    assert copy_key("颱風來了～") == copy_key("颱風來了〜") == copy_key("颱風來了~") == copy_key("颱風來了")
    assert copy_key("颱風來了｜中央社") == copy_key("颱風來了 | 中央社") == copy_key("颱風來了／中央社")
    assert copy_key("氣溫18～22度") == copy_key("氣溫18〜22度") != copy_key("氣溫1822度")
    assert copy_key("C++ tips") != copy_key("C tips")
    assert copy_key("1+1=2") != copy_key("112")


def test_a_wire_dateline_byline_or_source_name_is_no_part_of_its_copy():
    """A wire story goes out with its dateline (``新華社北京12月6日電``, ``BEIJING (Reuters) -``), a byline
    (``（記者 王小明）``) or the name of its source after it (``- 中央社``, ``| Reuters``, ``——人民網``) at
    some desks and without at others: the same text, one copy group. A source's name or a date inside the
    headline, a figure of it, or a word after a dash that names no source stays."""
    plain = copy_key("央行宣佈降準0.5個百分點")
    for text in (
        "新華社北京12月6日電 央行宣佈降準0.5個百分點",
        "新华社北京12月6日电 央行宣佈降準0.5個百分點",
        "中新網12月6日電 央行宣佈降準0.5個百分點",
        "（中央社記者王小明台北6日電）央行宣佈降準0.5個百分點",
        "新華社北京12月6日電（記者王小明）央行宣佈降準0.5個百分點",
        "央行宣佈降準0.5個百分點（記者 王小明）",
        "央行宣佈降準0.5個百分點【記者王小明／台北報導】",
        "央行宣佈降準0.5個百分點 - 中央社",
        "央行宣佈降準0.5個百分點 | Reuters",
        "央行宣佈降準0.5個百分點——人民網",
        "央行宣佈降準0.5個百分點｜中央社 CNA",
        "央行宣佈降準0.5個百分點 - 自由時報 - 中央社",
    ):
        assert copy_key(text) == plain, text
    english = copy_key("China's central bank cuts reserve ratio by 0.5 point")
    for text in (
        "BEIJING (Reuters) - China's central bank cuts reserve ratio by 0.5 point",
        "BEIJING, Dec 6 (Reuters) - China's central bank cuts reserve ratio by 0.5 point",
        "TAIPEI, Taiwan (AP) — China's central bank cuts reserve ratio by 0.5 point",
        "China's central bank cuts reserve ratio by 0.5 point - AP",
        "China's central bank cuts reserve ratio by 0.5 point | Reuters",
        "(Reuters) - China's central bank cuts reserve ratio by 0.5 point - Reuters",
    ):
        assert copy_key(text) == english, text
    # what names no wire, or sits inside the headline, stays
    assert copy_key("央行宣佈降準0.5個百分點 - 更新") != plain
    assert copy_key("中央社：央行宣佈降準0.5個百分點") != plain
    assert copy_key("12月6日 央行宣佈降準0.5個百分點") != plain
    assert copy_key("記者王小明專訪央行總裁") != copy_key("專訪央行總裁")
    assert copy_key("Reuters sues AP") != copy_key("Reuters sues")
    assert copy_key("Court rules - update") != copy_key("Court rules")
    assert copy_key("China's central bank cuts reserve ratio, officials say") != english
    assert copy_key("BEIJING - China's central bank cuts reserve ratio by 0.5 point") != english
    assert copy_key("Man bites dog (AP) - police") != copy_key("police")  # a wire's place is in capitals
    assert copy_key("周杰倫新歌（文末有彩蛋）") != copy_key("周杰倫新歌")
    assert copy_key("- 中央社") == copy_key("中央社") != ""  # a source's name alone is the whole text


def test_the_copies_of_a_wire_story_some_sent_with_its_dateline_or_source_are_one_group():
    story = "央行宣佈降準0.5個百分點"
    texts = [
        story,
        f"新華社北京12月6日電 {story}",
        f"{story} - 中央社",
        f"{story}（記者 王小明）",
        "央行宣佈降準1個百分點",
    ]
    found = find_copies([f"w{i}" for i in range(5)], texts)
    assert found.groups() == [["w0", "w1", "w2", "w3"]]


def test_a_dateline_or_a_byline_takes_no_word_of_the_headline():
    """A dateline ends at its ``電``/``訊`` and a byline names a reporter: ``中央社：美股3日電動車股大漲``
    and ``中央社：台股3日電動車股大漲`` (electric-car shares, in two markets) lost all but ``動車股大漲`` and
    were copies; a press conference (``（記者會全文）``, ``【記者會】``) was read as a byline."""
    assert copy_key("中央社：美股3日電動車股大漲") != copy_key("中央社：台股3日電動車股大漲")
    assert copy_key("中央社美股3日電動車股大漲") != copy_key("中央社台股3日電動車股大漲")
    assert copy_key("人民網評：12日訊息") != copy_key("人民網評：13日訊息")
    assert copy_key("央行降息（記者會全文）") != copy_key("央行降息")
    assert copy_key("【記者會】央行降息") != copy_key("央行降息")
    assert copy_key("央行降息（記者節特刊）") != copy_key("央行降息")
    # the datelines and bylines themselves are still no part of the copy
    assert copy_key("新華社北京12月6日電 央行降息") == copy_key("新华社北京12月6日电（记者王小明）央行降息")
    assert copy_key("新華社北京12月6日電：央行降息（記者王小明／北京報導）") == copy_key("央行降息")


def test_a_dateline_of_places_parted_by_slashes_is_no_part_of_the_copy():
    """A story filed from two places or more carries both in its dateline, parted by a slash, as Reuters
    writes it (``HONG KONG/SHANGHAI (Reuters) -``, ``LONDON/NEW YORK, Dec 6 (Reuters) -``): the dateline of
    one place went and that of two stayed, so the two copies of a story were none. Words in lower case
    before a slash are a headline's, not a place (``US/China trade (Reuters) - talks``)."""
    plain = copy_key("Taiwan said to hold talks")
    for dateline in (
        "TAIPEI/BEIJING (Reuters) - ",
        "HONG KONG/SHANGHAI (Reuters) - ",
        "LONDON/NEW YORK, Dec 6 (Reuters) - ",
        "WASHINGTON / LONDON / PARIS (Reuters) — ",
        "TAIPEI (Reuters) - ",
    ):
        assert copy_key(f"{dateline}Taiwan said to hold talks") == plain, dateline
    assert copy_key("US/China trade (Reuters) - talks") != copy_key("talks")


def test_a_word_joined_to_a_flash_label_by_a_hyphen_is_a_word_of_the_headline():
    """``Flash-flood``, ``Flash-sale``, ``Urgent-care``, ``Exclusive-interview``: a compound whose first
    word is a flash label was read as the label and its dash (``FLASH-``, ``UPDATE 1-``), so a flash-flood
    warning was a copy of a flood warning. The wire's label, in capitals or with a number or a space, still
    goes."""
    assert copy_key("Flash-flood warning issued for Taipei") != copy_key("Flood warning issued for Taipei")
    assert copy_key("Flash-sale draws crowds") != copy_key("Sale draws crowds")
    assert copy_key("Urgent-care clinic closes") != copy_key("Care clinic closes")
    assert copy_key("Exclusive-interview with the mayor") != copy_key("interview with the mayor")
    plain = copy_key("Flood warning issued")
    for label in ("FLASH-", "URGENT-", "EXCLUSIVE-", "UPDATE 1-", "Update 2-", "Flash - ", "Urgent: "):
        assert copy_key(f"{label}Flood warning issued") == plain, label
    assert copy_key("最新-颱風來了") == copy_key("颱風來了")


def test_a_long_text_closed_by_many_source_names_has_no_more_than_max_labels_taken_off():
    """A 100,000-character cell closed by thousands of source names or bylines (``x - AP - AP ...``, a
    feed's garbage) took ten seconds: each name taken off cost a search and a copy of the whole text. At most
    :data:`MAX_LABELS` are taken off one text now (the time it bounds is measured in no test), the rest
    are words of its key; the few names a desk sets still go."""
    for text, name, copies in (
        ("x" + " - AP" * 20_000, "ap", 20_000),
        ("x" + "(AP)" * 25_000, "ap", 25_000),
        ("x" + " （記者王小明）" * 10_000, "記者王小明", 10_000),
    ):
        assert copy_key(text) == "x" + name * (copies - MAX_LABELS), text[:12]
    dressed = "【快訊】新華社北京12月6日電 颱風來了（記者王小明） - 自由時報 - 中央社"
    assert copy_key(dressed) == copy_key("颱風來了")


def test_a_bracket_that_tells_what_befell_a_reporter_is_no_byline():
    """``（記者遭毆打）`` and ``（記者遭搶劫）`` (a reporter beaten, a reporter robbed), ``（記者被捕）``,
    ``【記者手記】`` (a column) and ``（記者提問全文）`` were read as bylines and dropped: two stories that
    differ by them alone were exact copies. They are words of the headline; a reporter's name still goes."""
    story = "颱風夜採訪"
    assert copy_key(f"{story}（記者遭毆打）") != copy_key(f"{story}（記者遭搶劫）")
    for bracket in ("（記者遭毆打）", "（記者被捕）", "【記者手記】", "（記者提問全文）", "（記者追問）"):
        assert copy_key(f"{story}{bracket}") != copy_key(story), bracket
        assert copy_key(f"{bracket}{story}") != copy_key(story), bracket
    named = copy_key(f"{story}【記者 李大華／台北報導】")
    assert copy_key(f"{story}（記者王小明）") == named == copy_key(story)


def test_a_source_name_goes_in_simplified_characters_as_in_traditional():
    """After ``--convert tw2sp`` a source's name is in Simplified characters: ``- 自由时报电子报``,
    ``- BBC中文网``, ``- 德国之声`` stayed where ``- 自由時報電子報`` and ``- 中央社`` went, so a copy sent
    with them was no copy of the one sent without."""
    story = copy_key("台风山陀儿逼近")
    for name in (
        "自由时报电子报", "自由财经", "udn联合新闻网", "工商时报", "ettoday新闻云", "tvbs新闻网",
        "公视新闻网", "三立新闻网", "民视新闻", "镜周刊", "镜新闻", "nownews今日新闻", "yahoo奇摩新闻",
        "yahoo新闻", "bbc中文网", "德国之声",
    ):  # fmt: skip
        assert copy_key(f"台风山陀儿逼近 - {name}") == story, name


def test_a_hyphen_or_a_figure_dash_before_a_source_name_or_after_a_label_is_a_dash():
    """A word processor or a CMS sets a hyphen U+2010, a non-breaking hyphen U+2011 (NFKC: U+2010) or a
    figure dash U+2012 where a desk typed ``-``: ``Floods hit the north ‐ Reuters`` kept ``reuters`` in its
    key where ``- Reuters``, ``– Reuters`` and ``— Reuters`` went, and so did a flash label or an English
    dateline before one (``UPDATE 1‐``, ``BEIJING (Reuters) ‐``): a copy sent so was no copy of the one sent
    without. They are dashes as ``-`` is; a word joined by one to a flash label is still a compound."""
    plain = copy_key("Floods hit the north")
    for dash in ("\u2010", "\u2011", "\u2012", "\u2e3a"):
        for text in (
            f"Floods hit the north {dash} Reuters",
            f"Floods hit the north {dash}AP",
            f"UPDATE 1{dash}Floods hit the north",
            f"BREAKING {dash} Floods hit the north",
            f"BEIJING (Reuters) {dash} Floods hit the north",
        ):
            assert copy_key(text) == plain, (f"U+{ord(dash):04X}", text)
        assert copy_key(f"颱風來了 {dash} 中央社") == copy_key("颱風來了"), f"U+{ord(dash):04X}"
    assert copy_key("Flash\u2010flood warning") != copy_key("Flood warning")
    assert copy_key("Flash\u2011flood warning") == copy_key("Flash-flood warning")
    assert copy_key("Court rules \u2010 update") != copy_key("Court rules")


def test_a_source_name_joined_to_a_word_by_a_hyphen_or_a_slash_is_a_word_of_the_headline():
    """``Rally turns anti-AP`` keyed as ``Rally turns anti`` (``-AP`` read as the credit ``- AP``), a copy of
    ``Rally turns anti-CNN``, and ``Trump sues CNN/AP`` one of ``Trump sues CNN/Reuters``: a hyphen or a slash
    set between two words with no space is a compound or a pair of names, no credit. A credit with a space
    on either side of its mark, a dash, a bar, or after CJK text still goes."""
    assert copy_key("Rally turns anti-AP") != copy_key("Rally turns anti-CNN")
    assert copy_key("Rally turns anti-AP") != copy_key("Rally turns anti")
    assert copy_key("Trump sues CNN/AP") != copy_key("Trump sues CNN/Reuters")
    assert copy_key("Staff quit for ex-BBC") != copy_key("Staff quit for ex")
    for hyphen in ("-", "\u2010", "\u2011"):
        assert copy_key(f"Floods hit the north{hyphen}AP") != copy_key("Floods hit the north"), hyphen
    assert copy_key("Rally turns anti-AP - Reuters") == copy_key("Rally turns anti-AP")
    # two sources' names joined after a credit's mark are two credits
    for credit in (" - Reuters/AP", " | CNN/AP", " - AP/Reuters", " - Reuters-AP"):
        assert copy_key("Rally turns violent" + credit) == copy_key("Rally turns violent"), credit
    for story, credits in (
        ("Rally turns violent", (" - AP", " -AP", "- AP", "--AP", "\u2014AP", "\u2012AP", "|AP", " / AP")),
        ("Rally of 12", (" - AP", " -AP", " (AP)")),  # a figure before: a credit with a space
        ("颱風來了", ("-中央社", "/中央社", "／中央社", "-CNA")),  # CJK joins no words by a hyphen
        ("COVID", ("-中央社",)),
    ):
        for credit in credits:
            assert copy_key(story + credit) == copy_key(story), story + credit


def test_the_tilde_and_the_slash_of_big5_are_marks_whichever_table_decoded_them():
    """Big5's full-width tilde (bytes A1E3) is ``～`` to CP950 and the tilde operator ``∼`` U+223C to
    Python's ``big5``, and its full-width slash (A241) is ``／`` to ``big5`` and the division slash ``∕``
    U+2215 to CP950 (the table of the ``iconv -f CP950`` nlsim advises for a Big5 file): one headline read
    from a Big5 file by the one table was no copy of itself read by the other, and a credit after ``∕``
    stayed in the key. They are the tilde and the slash they stand for."""
    tilde, slash = b"\xa1\xe3", b"\xa2\x41"
    for table in ("big5", "cp950", "big5hkscs"):
        assert copy_key("颱風來了" + tilde.decode(table)) == copy_key("颱風來了"), table
        assert copy_key("氣溫18" + tilde.decode(table) + "22度") == copy_key("氣溫18～22度"), table
        assert copy_key("颱風來了" + slash.decode(table) + "中央社") == copy_key("颱風來了"), table
        assert copy_key("營收1" + slash.decode(table) + "2") == copy_key("營收1/2"), table
    assert copy_key("颱風來了\u2215更新") == copy_key("颱風來了／更新") != copy_key("颱風來了")


def test_the_midline_ellipsis_of_taiwan_is_a_mark_as_the_ellipsis_is():
    """Taiwan's ellipsis is set as the midline ellipsis ``⋯`` U+22EF (a symbol to Unicode) as often as the
    ellipsis ``…`` (punctuation): ``颱風來了⋯`` was no copy of ``颱風來了…`` nor of ``颱風來了``. It is
    the mark it stands for."""
    plain = copy_key("颱風來了，高雄停班")
    for text in ("颱風來了⋯高雄停班", "颱風來了⋯⋯，高雄停班", "颱風來了…高雄停班", "颱風來了，高雄停班⋯"):
        assert copy_key(text) == plain, text
    assert copy_key("比分1⋯5") == copy_key("比分1…5") != copy_key("比分15")


def test_the_associated_press_is_a_source_by_the_names_feeds_give_it():
    """A news aggregator's feed closes a headline with the name of its publisher, the AP's as ``AP News``,
    and a desk credits the AP as ``The Associated Press``: ``... - AP News`` kept ``apnews`` in its key where
    ``- AP`` and ``- Associated Press`` went, so the AP's headline from the feed was no copy of itself from
    the wire."""
    story = "Airstrike near a market in Rakhine state kills 49 people"
    for credit in (" - AP News", " | AP News", " - The Associated Press", " (AP News)", " — AP NEWS"):
        assert copy_key(story + credit) == copy_key(story), credit
    assert copy_key("Trump sues the Associated Press") != copy_key("Trump sues")
    assert copy_key("AP News") == "apnews"


def test_a_character_the_unicode_tables_do_not_know_or_a_private_one_is_a_character_of_the_key():
    """A character newer than the interpreter's Unicode tables (category Cn: a CJK Extension I character of
    Unicode 15.1, an emoji of Unicode 16; to Python 3.11, Unicode 14, every emoji and CJK character of
    Unicode 15 too) or a private one (Co: a rare name's character that a Big5 system's user-defined area
    maps to) was dropped as a control character, though a page shows it: ``王𮯰明`` was a copy of
    ``王明`` and of ``王𮯱明``, two headlines that differ by an emoji copies, and one text's key was
    another under Python 3.11 than under 3.12. They are characters of the key; a control character or one
    that shows nothing still goes."""
    assert copy_key("王\U0002ebf0明當選") != copy_key("王\U0002ebf1明當選")
    assert copy_key("王\U0002ebf0明當選") != copy_key("王明當選")
    assert copy_key("Emoji of the year: \U0001fae9") != copy_key("Emoji of the year: \U0001fadf")
    assert copy_key("立委陳\ue000華質詢") != copy_key("立委陳華質詢")
    assert copy_key("\U0002ebf0") == "\U0002ebf0" and copy_key("\ue000") == "\ue000"
    assert copy_key("Rain\x07 in\u200b Taipei\x1b") == copy_key("Rain in Taipei")


def test_a_source_name_goes_as_a_feed_or_its_own_page_gives_it():
    """A news aggregator's feed and a source's own page title name it with its brand beside it:
    ``｜三立新聞網 SETN.com``, ``- 三立新聞網 Setn.com``, ``- 鏡週刊 Mirror Media``, ``- 風傳媒``: the key
    kept ``三立新聞網setncom`` where ``- 三立新聞網`` went, so such a copy was no copy of the one sent
    without."""
    story = "颱風山陀兒逼近，高雄停班停課"
    for credit in (
        "｜三立新聞網 SETN.com", " - 三立新聞網 Setn.com", " - 鏡週刊 Mirror Media", " - 風傳媒",
        " | 三立新闻网 setn.com", " - 镜周刊 Mirror Media", " - 风传媒",
    ):  # fmt: skip
        assert copy_key(story + credit) == copy_key(story), credit


def test_a_section_set_between_a_headline_and_its_source_goes_with_the_source():
    """A Taiwanese source's page title, and the feeds that take it, set the story's section before the
    source's name (``| 產經 - 中央社 CNA``, ``| 國際 | 中央社 CNA``, ``- 證券 - 工商時報``,
    ``| 娛樂星聞 | 三立新聞網 SETN.COM``): the source went and the section stayed in the key, so every such
    copy was no copy of the one sent without. A section goes with the source's name after it; a word
    between two marks before no source's name, or one that names no section, stays."""
    story = "台灣半導體攬才吸睛馬來西亞掀赴台就業熱潮"
    for credit in (
        "| 產經 - 中央社 CNA", " | 國際 | 中央社 CNA", "- 證券 - 工商時報", "- 日報 - 工商時報",
        " | 娛樂星聞 | 三立新聞網 SETN.COM", " | 产经 - 中央社 CNA",
    ):  # fmt: skip
        assert copy_key(story + credit) == copy_key(story), credit
    assert copy_key(story + " | 產經") != copy_key(story)  # no source after it
    assert copy_key(story + " | 高雄 - 中央社 CNA") != copy_key(story)  # no section


def test_each_fields_credit_or_dateline_is_no_part_of_the_copy_of_several_fields():
    """A title and a description, each read for what a desk sets around it before they are joined: a
    credit closing the title (``- AP``, ``- Reuters``) or a dateline opening the description
    (``TAIPEI (CNA) -``) stood mid-text in the joined text, and the copies keyed apart."""
    rain = "Heavy rain flooded roads across the north on Monday."
    ap = copy_key(("Floods hit the north - AP", rain))
    assert ap == copy_key(("Floods hit the north - Reuters", rain))
    assert ap == copy_key(("Floods hit the north", f"TAIPEI (CNA) - {rain}"))
    assert ap == copy_key(("【快訊】Floods hit the north", rain)) == copy_key(("Floods hit the north", rain))
    # the fields' words and numbers are still the copy's: another description or a figure is another text
    assert ap != copy_key(("Floods hit the north - AP", "Heavy rain flooded roads in the south."))
    assert copy_key(("Score 3", "2 goals")) != copy_key(("Score 32", "goals"))
    # one field is read as it always was
    for text in (
        "Floods hit the north - AP",
        "【快訊】新華社北京12月6日電 颱風來了 - 中央社",
        "- AP",
        "Rain",
    ):
        assert copy_key((text,)) == copy_key(text)


def test_copies_of_several_fields_differing_by_a_fields_credit_or_dateline_are_one_group():
    rain = "Heavy rain flooded roads across the north on Monday."
    texts = [
        ("Floods hit the north - AP", rain),
        ("Floods hit the north - Reuters", rain),
        ("Floods hit the north", f"TAIPEI (CNA) - {rain}"),
        ("Floods hit the south", rain),
    ]
    assert find_copies(["a", "b", "c", "d"], texts).groups() == [["a", "b", "c"]]


def test_a_photo_or_video_label_closing_or_opening_a_headline_is_no_part_of_its_copy():
    """A portal sets a photo or video label on a headline it runs with pictures (``(圖)``, ``（組圖）``,
    ``[視頻]``, ``(Photos)``), as THUCNews' feeds do on a thousand headlines: the wire's headline with it
    and without it were no copies. The label is no part of the copy now, at the end or at the start; a
    number or a part in brackets (``(2)``, ``(上篇)``) still tells another item, and a label that is the
    whole headline stays."""
    plain = copy_key("寶馬新X5北京車展首發")
    labels = ("(圖)", "（圖）", "(组图)", "（組圖）", "(附圖)", "(多圖)", "【視頻】", "[视频]", "(高清組圖)")
    for label in labels:
        assert copy_key(f"寶馬新X5北京車展首發{label}") == plain, label
        assert copy_key(f"{label}寶馬新X5北京車展首發") == plain, label
    assert copy_key("寶馬新X5北京車展首發(圖) - 中央社") == plain
    english = copy_key("Floods hit the north")
    for label in (" (Photos)", " (PHOTO)", " [Video]", " (video)"):
        assert copy_key(f"Floods hit the north{label}") == english, label
    assert copy_key("寶馬新X5北京車展首發(2)") != plain
    assert copy_key("寶馬新X5北京車展首發(上篇)") != plain
    assert copy_key("(圖)") == "圖"
    assert copy_key("地圖") != ""


def test_the_copies_of_a_story_some_run_with_a_photo_label_are_one_group():
    story = "寶馬新X5北京車展首發"
    texts = [story, f"{story}(圖)", f"{story}（組圖）", "寶馬新X3北京車展首發"]
    found = find_copies([f"p{i}" for i in range(4)], texts)
    assert found.groups() == [["p0", "p1", "p2"]]


def test_the_sources_a_news_aggregators_feed_names_most_are_source_names():
    """A news aggregator's feed closes each headline with its source's name as the source's page gives it:
    ``- 民視新聞網``, ``- 華視新聞``, ``- 鉅亨網``, ``- 香港電台``, ``- CNBC``, ``- The Wall Street
    Journal``, ``- NHK``. The key kept such a name, so the feed's copy of a wire story was no copy of the
    one sent without; a word after a dash that names no source stays."""
    story = "颱風山陀兒逼近，高雄停班停課"
    for credit in (
        " - 民視新聞網", " - 民视新闻网", " - 華視新聞", " - 台視新聞", " - 中視新聞", " - 公視新聞",
        " - 鉅亨網", " - 钜亨网", " - 今周刊", " - 商業周刊", " - 天下雜誌", " - 關鍵評論網",
        " - 新頭殼 Newtalk", " - 新頭殼", " - 報導者", " - Yahoo奇摩股市", " - 香港電台", " - RTHK",
        " - 東網", " - on.cc 東網", " - 文匯報", " - 大公報", " - 新浪新聞", " - 騰訊新聞", " - 網易新聞",
        " - 財新網", " - 第一財經", " - 界面新聞", " - 聯合早報", " - 联合早报",
    ):  # fmt: skip
        assert copy_key(story + credit) == copy_key(story), credit
    english = "Typhoon Krathon nears Kaohsiung"
    for credit in (
        " - CNBC", " - The Wall Street Journal", " - WSJ", " - NHK", " - NHK WORLD-JAPAN", " - Axios",
        " - POLITICO", " - The Independent", " - USA TODAY", " - CNA", " - The Straits Times",
        " - The Japan Times", " - Hong Kong Free Press HKFP", " - Voice of America", " - DW",
        " - France 24", " - Nikkei Asia", " - Forbes", " - MarketWatch", " - Yahoo Finance",
    ):  # fmt: skip
        assert copy_key(english + credit) == copy_key(english), credit
    assert copy_key("Storm hits - Time") != copy_key("Storm hits")
    assert copy_key("颱風來了 - 新聞") != copy_key("颱風來了")


def test_a_box_drawing_line_set_as_a_dash_is_a_dash():
    """Desks that type in Big5 set the box-drawing line ``─`` (U+2500) or its heavy form ``━`` as a dash
    (``颱風來了 ─ 中央社``, ``颱風─高雄停班``): a symbol, so the key kept it where it drops the em dash
    ``—``, and a source's name after it stayed. It is read as a dash and a mark."""
    story = copy_key("颱風來了")
    for dash in ("\u2500", "\u2501"):
        assert copy_key(f"颱風來了 {dash} 中央社") == story, dash
        assert copy_key(f"颱風{dash}高雄停班") == copy_key("颱風—高雄停班"), dash
        assert copy_key(f"比分2{dash}1") == copy_key("比分2-1") != copy_key("比分21"), dash


def test_a_title_cased_headline_before_an_agency_in_brackets_is_no_dateline():
    """A feed's headline in title case that opens with an acronym and carries the agency in brackets before
    a dash (``NASA Delays Artemis Launch (AP) - Yahoo News``) was read as a dateline up to the dash, so two
    unrelated stories from one feed kept only the feed's name and were copies. A dateline's place is in
    capitals word by word (``NEW YORK``, ``RIO DE JANEIRO``); only after a comma does it go on in small
    letters (``TAIPEI, Taiwan``, ``SAN JUAN, Puerto Rico``), and those datelines still go."""
    nasa = "NASA Delays Artemis Launch (AP) - Yahoo News"
    fbi = "FBI Raids Trump Home (AP) - Yahoo News"
    assert copy_key(nasa) != copy_key(fbi)
    assert find_copies(["n", "f"], [nasa, fbi]).groups() == []
    assert copy_key("US Stocks Fall Sharply (Reuters) - talks") != copy_key("talks")
    plain = copy_key("Storm hits the coast")
    for dateline in (
        "NEW YORK (AP) - ",
        "RIO DE JANEIRO (Reuters) - ",
        "UNITED NATIONS (AP) — ",
        "ST. LOUIS (AP) - ",
        "WASHINGTON, D.C. (AP) - ",
        "TAIPEI, Taiwan (AP) — ",
        "SAN JUAN, Puerto Rico (AP) - ",
        "FORT LAUDERDALE, Fla. (AP) - ",
        "KYIV, Ukraine, Dec 6 (Reuters) - ",
        "NEW YORK, Dec. 6 (AP) - ",
        "LONDON/NEW YORK, Dec 6 (Reuters) - ",
    ):
        assert copy_key(f"{dateline}Storm hits the coast") == plain, dateline


def test_an_acronym_after_a_comma_is_no_dateline_place():
    """A feed's headline that opens with two acronyms parted by a comma and carries the agency in brackets
    (``UK, EU Reach Deal (AP) - Yahoo News``) was read as a dateline up to the dash, since a dateline's
    place may go on after a comma: two unrelated stories of the feed kept only the feed's name and were
    copies. After a comma a place goes on in small letters (``Taiwan``, ``Puerto Rico``, ``Fla.``), as a
    state's dotted abbreviation (``D.C.``, ``N.J.``, ``W.Va.``) or as a code in capitals right before the
    agency (``LONDON, UK (Reuters)``), never as a word in capitals before another word."""
    feed = ["UK, EU Reach Deal (AP) - Yahoo News", "US, UK Strike Back (AP) - Yahoo News"]
    assert copy_key(feed[0]) != copy_key(feed[1])
    assert find_copies(["a", "b"], feed).groups() == []
    plain = copy_key("Storm hits the coast")
    for dateline in (
        "TRENTON, N.J. (AP) - ",
        "CHARLESTON, W.Va. (AP) - ",
        "WASHINGTON, D.C. (AP) - ",
        "SARAJEVO, Bosnia-Herzegovina (AP) - ",
        "LONDON, UK (Reuters) - ",
        "NEW YORK, NY (AP) - ",
    ):
        assert copy_key(f"{dateline}Storm hits the coast") == plain, dateline


def test_a_hyphen_between_two_letters_is_kept_in_the_key():
    """``Coach to re-sign`` and ``Coach to resign`` say opposite things, and so do ``re-cover`` and
    ``recover``: the key dropped the hyphen between the two letters and made them copies. A hyphen that
    joins two letters with no space is kept (whatever its form: ``‐``, U+2011); one set apart as a dash,
    or between a letter and a figure (``F-16``, ``COVID-19``), still goes, and CJK text joins no words by
    one."""
    assert copy_key("Coach to re-sign after title") != copy_key("Coach to resign after title")
    assert find_copies(["a", "b"], ["Coach to re-sign", "Coach to resign"]).groups() == []
    assert copy_key("Firm to re-cover losses") != copy_key("Firm to recover losses")
    for hyphen in ("\u2010", "\u2011"):
        assert copy_key(f"Coach to re{hyphen}sign") == copy_key("Coach to re-sign"), hyphen
    assert copy_key("U.S.-China talks") == copy_key("US-China talks")
    assert copy_key("Coach to re - sign") == copy_key("Coach to resign")
    assert copy_key("F-16 crashes") == copy_key("F16 crashes")
    assert copy_key("COVID-19 cases rise") == copy_key("COVID 19 cases rise")
    assert copy_key("颱風-高雄停班") == copy_key("颱風 高雄停班")


def test_the_minus_of_a_negative_figure_is_kept_in_the_key():
    """``玉山氣溫-5度`` and ``玉山氣溫5度`` (five below zero, five above) and ``Nasdaq -2%`` and ``Nasdaq 2%``
    were one key, the hyphen before the figure dropped as a mark: two days' weather or two sessions were
    grouped as copies. A hyphen or a minus sign set right before a figure, after a space, a bracket, CJK
    text or nothing, is the figure's sign and stays; one that joins a word to a figure (``COVID-19``,
    ``F-16``) or parts two figures (``2-1``) is read as before."""
    assert copy_key("玉山氣溫-5度 下雪了") != copy_key("玉山氣溫5度 下雪了")
    assert find_copies(["a", "b"], ["玉山氣溫-5度", "玉山氣溫5度"]).groups() == []
    assert copy_key("Nasdaq -2% as tech slides") != copy_key("Nasdaq 2% as tech slides")
    assert copy_key("Nasdaq \u22122% as tech slides") == copy_key("Nasdaq -2% as tech slides")
    shrinks = copy_key("GDP shrinks (-0.5%)")
    assert shrinks == copy_key("GDP shrinks ( -0.5 % )") != copy_key("GDP shrinks (0.5%)")
    assert copy_key("-2% on the day") != copy_key("2% on the day")
    assert copy_key("COVID-19 cases rise") == copy_key("COVID 19 cases rise")
    assert copy_key("Arsenal 2-1 Spurs") == copy_key("Arsenal 2 - 1 Spurs") != copy_key("Arsenal 21 Spurs")
    assert copy_key("Storm - 5 dead") == copy_key("Storm 5 dead")  # a dash set apart is no sign


def test_a_character_that_shows_nothing_around_a_label_dateline_or_source_leaves_it_aside_all_the_same():
    """A byte-order mark left by joined files, a zero-width space or a direction mark a CMS set before a
    flash label or a dateline, or after a source's name (``\\ufeff【快訊】颱風來了``,
    ``\\u200fBEIJING (Reuters) - Rain``, ``颱風來了 - 中央社\\u200b``), kept the label, the dateline or the
    name in the key: the copy looks the same as the one without and was none. What shows nothing is read
    as absent before the labels are looked for."""
    story, rain = copy_key("颱風來了"), copy_key("Rain")
    for text in (
        "\ufeff【快訊】颱風來了",
        "\u200b【快訊】颱風來了",
        "\u3164【快訊】颱風來了",
        "颱風來了 - 中央社\u200b",
        "颱風來了 - 中央社\u200e",
        "颱風來了 -\u200b中央社",
        "新華社北京12月6日電\u200b 颱風來了",
    ):
        assert copy_key(text) == story, text
    for text in ("\u200fBEIJING (Reuters) - Rain", "Rain | Reuters\ufeff", "\u2066UPDATE 1-Rain\u2069"):
        assert copy_key(text) == rain, text
    found = find_copies(["a", "b"], ["\ufeff【快訊】颱風來了", "颱風來了 - 中央社"])
    assert found.groups() == [["a", "b"]]
    assert (
        copy_key("Rally turns anti-\u200bAP")
        == copy_key("Rally turns anti-AP")
        != copy_key("Rally turns anti")
    )


def test_an_en_dash_or_a_figure_dash_set_as_a_minus_is_the_figure_s_sign():
    """Typeset English sets the minus of a negative figure as an en dash or a figure dash (``–5C``):
    ``Temperatures fall to –5C`` and ``Temperatures fall to 5C`` were one key, two days' weather grouped as
    copies. Right before a figure, after a space, a bracket or nothing, either is the figure's sign, as a
    hyphen or a minus sign is; between two figures (``2010–11``) or set apart (``Storm – 5 dead``) it is read
    as before."""
    cold = copy_key("Temperatures fall to \u20135C")
    assert cold != copy_key("Temperatures fall to 5C")
    assert cold == copy_key("Temperatures fall to -5C") == copy_key("Temperatures fall to \u20125C")
    weather = ["Temperatures fall to \u20135C", "Temperatures fall to 5C"]
    assert find_copies(["a", "b"], weather).groups() == []
    assert copy_key("GDP shrinks (\u20130.5%)") == copy_key("GDP shrinks (-0.5%)")
    season = copy_key("the 2010\u201311 season")
    assert season == copy_key("the 2010-11 season") == copy_key("the 2010 11 season")
    assert copy_key("Storm \u2013 5 dead") == copy_key("Storm 5 dead")
    assert copy_key("Rain \u2013 Reuters") == copy_key("Rain")  # a dash before a source's name: as before
