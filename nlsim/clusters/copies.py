"""Exact copies: items whose texts are identical once normalised, grouped before the neighbour search.

Identical wire copies are the easiest near-duplicates a newsroom has, and the ones a neighbour search
handles worst: 150 copies of one headline fill each other's k nearest neighbours, the search finds no
other neighbour for any of them, and a cluster rule that asks for support inside a cluster
(:class:`~nlsim.clusters.rules.SharedSupport`) keeps a few dozen of them and leaves the rest alone. So,
as text-dedup and SemHash do, exact duplicates are grouped first:

- :func:`copy_key`: the text in the run's script (after OpenCC), the HTML a CMS left in it read as the text
  a page shows (:func:`nlsim.io.cells.shown_text`: ``AT&amp;T`` is ``AT&T``, ``<b>Storm</b>`` is ``Storm``),
  NFKC, case folded, without white space, punctuation, control characters or characters that show nothing
  (a Hangul filler, a variation selector: :func:`nlsim.io.cells.unseen`), a mark between two digits kept
  (``1.5%`` is not ``15%``) but for a thousands separator (``3,000`` is ``3000``), and without what a wire or
  a desk sets around a headline (a flash label, a dateline, a byline, the source's name after it). Two items
  with the same non-empty key are copies.
- :func:`find_copies`: the copy groups of a window, each led by its earliest member (the order rule of
  :mod:`nlsim.clusters.order`), its *representative*. Copies further apart in time than the run's time
  window (``--window-hours``) are not copies (a group is cut where a member comes more than the window
  after the first member of its part), and an editor's "not the same story" between two copies wins: they
  are put in different groups (:attr:`Copies.parted`: the representatives of the parts a verdict made, each
  searched for its own neighbours: a daily run searches again those an earlier day read as copies).
- The neighbour search reads one item per group (the representative stands for every copy: the others
  have its text) and counts k *distinct* neighbours, a group as many as its copies when they are more
  (:func:`nlsim.search.neighbors.neighbor_pairs` with ``copies``); the cluster rule reads each group as
  one item (:func:`contract` before the rule, :func:`expand` after it), so every copy ends in its
  representative's cluster, and a group that links to nothing else is a cluster of its own copies.

Example:
    >>> import pandas as pd
    >>> times = pd.to_datetime(["2024-05-01 08:00", "2024-05-01 09:00", "2024-05-03 09:00", None], utc=True)
    >>> texts = ["Rain in Taipei.", "rain in taipei", "Rain in Taipei", "x"]
    >>> found = find_copies(["a", "b", "c", "d"], texts, times)
    >>> found.groups()
    [['a', 'b', 'c']]
    >>> find_copies(["a", "b", "c", "d"], ["Rain", "rain", "rain", "x"], times, window_hours=24).groups()
    [['a', 'b']]
    >>> parted = find_copies(["a", "b", "c"], ["Rain", "rain", "rain"], times[:3], cannot=[("a", "c")])
    >>> parted.groups(), parted.parted.tolist()
    ([['a', 'b']], [0, 2])
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nlsim.clusters.constraints import LinkConstraints, pair_key
from nlsim.clusters.order import order_keys
from nlsim.io.cells import shown_text, unseen, unseen_characters

COPY_KEY_VERSION = 20
"""Which definition of :func:`copy_key` grouped the copies, kept in a daily state's identity: a state whose
copies an earlier one grouped (1: the characters that show nothing kept, a mark between two digits dropped;
a state written then has none; 2: HTML markup read as written, ``AT&amp;T`` not ``AT&T``, and a minus sign
not a hyphen; 3: a flash label before a headline part of it, ``【快訊】`` a word of the copy; 4: a tilde and a
bar symbols, ``颱風來了～`` no copy of ``颱風來了〜``; 5: a wire's dateline, a byline and a source's name
after a headline part of it, ``新華社北京12月6日電`` and ``- 中央社`` words of the copy, and the groups the
time window cut one text into each one of a search's k neighbours; 6: the first word of a compound read as a
flash label, ``Flash-flood warning`` a copy of ``Flood warning``, and a bracket that tells what befell a
reporter a byline, ``（記者遭毆打）``, and some sources' names in Simplified characters words of the copy,
``- 自由时报电子报``; 7: a hyphen U+2010 or U+2011, a figure dash and a two- or three-em dash no dash,
``‐ Reuters`` a word of the copy; 8: a source's name joined to the word before it by a hyphen or a slash
with no space a credit, ``Rally turns anti-AP`` a copy of ``Rally turns anti-CNN``, and the tilde operator
``∼``, the division slash ``∕`` and the midline ellipsis ``⋯`` symbols, ``颱風來了∼`` no copy of
``颱風來了～``, the AP's names ``AP News`` and ``The Associated Press`` words of the copy, and a character
newer than the interpreter's Unicode tables or a private one no character, ``王𮯰明`` a copy of ``王明``,
and a source's name with its brand beside it and a section before a source's name words of the copy,
``- 三立新聞網 Setn.com``, ``| 產經 - 中央社 CNA``; 9: a text of several fields keyed as one text, a credit
closing its title and a dateline opening its description words of the copy, ``Floods - AP`` and
``Floods - Reuters`` with one description no copies; 10: a photo or video label in brackets a word of
the copy, ``寶馬新X5首發(圖)`` no copy of ``寶馬新X5首發``; 11: some sources a feed names words of the copy,
``- 民視新聞網``, ``- CNBC``, and a box-drawing line a symbol, ``颱風 ─ 中央社`` no copy of ``颱風``; 13: a
dateline of places parted by slashes words of the copy, ``HONG KONG/SHANGHAI (Reuters) - Floods`` no copy
of ``Floods``; 14: a headline in title case before an agency in brackets a dateline,
``NASA Delays Launch (AP) - Yahoo News`` a copy of ``FBI Raids Home (AP) - Yahoo News``; 15: a hyphen
between two letters no mark, ``re-sign`` a copy of ``resign``; 16: the minus before a figure no mark,
``氣溫-5度`` a copy of ``氣溫5度``; 17: a character that shows nothing before a label or a dateline or after
a source's name kept them words of the copy, ``\\ufeff【快訊】颱風`` no copy of ``颱風``; 18: a word in
capitals after a comma part of a dateline's place, ``UK, EU Reach Deal (AP) - Yahoo News`` a copy of ``US, UK
Strike Back (AP) - Yahoo News``; 19: an en dash or a figure dash before a figure no sign, ``–5C`` a copy of
``5C``) is paired again, so that its kept links follow one definition."""

GROUPING = frozenset(" ,.'\u2019\u066c")
"""The marks that group a number's digits by thousands (``3,000``, ``3.000``, ``3 000`` with any space,
``3'000``, ``3’000``, the Arabic ``٬``): one between a group of three digits and the digits before it is
not part of the number (:func:`copy_key`)."""

MINUS = "\u2212"
"""The minus sign, a symbol (Sm) that NFKC keeps: a copy key reads it as the hyphen-minus (punctuation) it
stands for, so ``−2%`` is ``-2%``, and the mark between two digits of ``2−1`` is that of ``2-1``."""

STAND_INS = str.maketrans({MINUS: "-", "\u223c": "~", "\u2215": "/", "\u22ef": "\u2026"})
"""Symbols (Sm) that NFKC keeps and a copy key reads as the mark they stand for: the minus sign
(:data:`MINUS`), and the tilde operator ``∼`` and the division slash ``∕`` that Big5's full-width tilde and
slash are to one table and not to another (bytes A1E3: ``∼`` to Python's ``big5``, ``～`` to CP950; A241:
``／`` to ``big5``, ``∕`` to CP950, the table of ``iconv -f CP950``): one headline read from a Big5 file by
either table is one text (``颱風來了∼`` is ``颱風來了～``, ``颱風來了∕中央社`` ``颱風來了／中央社``); and the
midline ellipsis ``⋯`` Taiwan sets as often as the ellipsis ``…``."""

HYPHENS = "-\u2010"
"""The hyphens a desk joins two words with or sets as a dash: the hyphen-minus and the hyphen U+2010 (NFKC
makes the non-breaking hyphen U+2011 one): :func:`_flash` reads a word joined to a flash label by one as a
compound."""

SIGNS = HYPHENS + "\u2012\u2013"
"""The marks that are a figure's minus when set right before it (:func:`_signed`): the hyphens
(:data:`HYPHENS`; the minus sign is read as one, :data:`STAND_INS`), and the figure dash and the en dash that
typeset English sets as a minus (``–5C``)."""

BOX_LINES = "\u2500\u2501"
"""The box-drawing lines ``─`` and ``━`` that desks typing in Big5 set as a dash: symbols (So), read as a
dash (:data:`DASHES`) and as a mark (:data:`SYMBOL_MARKS`)."""

DASHES = HYPHENS + "\u2012\u2013\u2014\u2015\u2e3a\u2e3b" + BOX_LINES
"""The marks a desk sets as a dash after a flash label (:data:`FLASH`), a dateline (:data:`DATELINE`) or
before a source's name (:data:`SOURCE`), read after NFKC: the hyphens (:data:`HYPHENS`), the figure dash,
the en and em dashes, the horizontal bar, the two- and three-em dashes and the box-drawing lines
(:data:`BOX_LINES`) (``UPDATE 1‐``, ``- Reuters``, ``– Reuters``, ``— Reuters``, ``‐ Reuters`` typed by a
word processor, ``─ 中央社`` are one dash)."""
DASH_MARKS = re.escape(DASHES)
""":data:`DASHES` as they go into a regular expression's brackets (``-`` escaped: no range)."""

JOINERS = HYPHENS + "/"
"""The marks that join two words set with no space on either side (``anti-AP``, ``CNN/AP``): a source's name
after one is a word of a compound or a pair of names, no credit (:func:`_joined`)."""

FLASH_LABELS = (
    "快訊|快讯|獨家|独家|最新|即時|即时|突發|突发|速報|速报|更新"
    "|breaking news|breaking|exclusive|urgent|flash|update(?: ?[0-9]{1,2})?"
)
"""The flash labels a desk puts before a wire story's headline (in lower case; read in any), :data:`FLASH`."""

MEDIA_LABELS = (
    "圖|图|組圖|组图|附圖|附图|多圖|多图|高清組圖|高清组图|圖文|图文|圖集|图集|視頻|视频|影片|影音"
    "|photos?|pictures|video"
)
"""The labels a portal sets in brackets on a headline it runs with pictures or a video (in lower case; read
in any): ``(圖)``, ``（組圖）``, ``[視頻]``, ``(Photos)``, at its end (:data:`SOURCE`) or its start
(:data:`FLASH`); not a number or a part (``(2)``, ``(上篇)``), which tells another item."""

FLASH = re.compile(
    rf"^\s*(?:[\[【〔(〈《「]\s*(?:{FLASH_LABELS})\s*[\]】〕)〉》」]|[(\[【〔]\s*(?:{MEDIA_LABELS})\s*[)\]】〕]"
    rf"|(?P<label>{FLASH_LABELS})(?P<mark>\s*[/:|{DASH_MARKS}]))\s*",
    re.IGNORECASE,
)
"""A flash label that opens a headline, read after NFKC (``（`` is ``(``, ``／`` is ``/``): in brackets
(``【快訊】``, ``[Breaking]``, ``（獨家）``) or followed by a slash, a colon, a bar or a dash (``快訊／``,
``BREAKING:``, ``UPDATE 1-``), or a photo or video label in brackets (:data:`MEDIA_LABELS`: ``【視頻】``);
not a word that only starts like one (``Breaking Bad``, ``獨家專訪``), nor the first word of a compound
(:func:`_flash`: ``Flash-flood``, ``Urgent-care``)."""

WIRE_AGENCIES_ZH = (
    "新華社|新华社|中新社|中新網|中新网|中央社|人民網|人民网|央視網|央视网|國際在線|国际在线"
    "|法新社|路透社|美聯社|美联社|共同社|韓聯社|韩联社"
)
"""The news agencies whose Chinese dateline opens a wire story (after NFKC): :data:`DATELINE`."""

WIRE_AGENCIES_EN = "reuters|ap|afp|xinhua|bloomberg|cna|kyodo|yonhap|upi|dpa|pti|efe|ansa|tass"
"""The news agencies an English dateline names in brackets (``BEIJING (Reuters) -``): :data:`DATELINE`."""

DATELINE = re.compile(
    rf"^\s*(?:(?P<open>[(\[【〔])\s*)?(?:{WIRE_AGENCIES_ZH})(?:記者|记者)?[^\W\d_]{{0,12}}?"
    r"(?:\d{1,2}月)?\d{1,2}日(?:電|电|訊|讯)(?(open)\s*[)\]】〕]|(?=[\s(\[【〔:,]|$))"
    r"|^\s*(?-i:[A-Z][A-Z.'-]+(?: +[A-Z][A-Z.'-]+){0,4}"
    r"(?:\s*,\s*(?:(?:[A-Z]\.(?:[A-Z][a-z]?\.)+|[A-Z][a-z']*(?:-[A-Z]?[a-z']+)*\.?)"
    r"(?: +[A-Z][a-z']*(?:-[A-Z]?[a-z']+)*\.?){0,2}|[A-Z]{2,3}(?=\s*\())){0,2}"
    r"(?:\s*/\s*[A-Z][A-Z.'-]+(?:\s+[A-Z][A-Z.'-]+){0,3}){0,3}(?:,\s*[A-Z][a-z]{2,8}\.?\s+\d{1,2})?\s*)?"
    rf"\((?:{WIRE_AGENCIES_EN})\)\s*[{DASH_MARKS}]+",
    re.IGNORECASE,
)
"""A wire dateline that opens a story, read after NFKC (the agency in any case): an agency's Chinese
one, the agency, perhaps its reporter, the place (letters only) and the day the story was filed, then a
space, a bracket or a mark (``新華社北京12月6日電``, ``中新網12月6日電``, ``（中央社記者王小明台北6日電）``;
not the ``電`` of ``電動車`` in ``中央社：美股3日電動車股大漲``), or an English one, a
place, perhaps the day, and the agency in brackets before a dash (``BEIJING (Reuters) -``,
``WASHINGTON, Dec 6 (Reuters) -``, ``TAIPEI, Taiwan (AP) —``, or places parted by slashes, as a story
filed from two or more is, ``HONG KONG/SHANGHAI (Reuters) -``, ``LONDON/NEW YORK, Dec 6 (Reuters) -``);
not an agency's name alone (``中央社：``), a date alone (``12月6日``) nor a place in lower case (``Man bites
dog (AP) -``: a wire's English place is in capitals, word by word, and goes on in small letters only after a
comma, ``SAN JUAN, Puerto Rico``, ``FORT LAUDERDALE, Fla.``, as a state's dotted abbreviation, ``TRENTON,
N.J.``, or as a code in capitals right before the agency, ``LONDON, UK (Reuters)``; a headline in title case,
``NASA Delays Launch (AP) -``, or one with a word in capitals after a comma, ``UK, EU Reach Deal (AP) -``, is
no place)."""

BYLINE = (
    r"[(\[【〔]\s*(?:(?:記者|记者|實習記者|实习记者|特派員|特派员)(?!會|会|節|节|證|证|們|们|站|室|團|团|招待|協會|协会|遭|被|手記|手记|提問|提问|追問|追问)\s*[/:]?"
    r"|(?:文|撰文|編譯|编译|圖|图|文/圖|文/图)\s*[/:])\s*[^\d()\[\]【】〔〕]{1,24}?\s*[)\]】〕]"
)
"""A reporter's byline in brackets: ``（記者 王小明）``, ``【記者王小明／台北報導】``, ``（文／王小明）``
(no figure in it; a bracket that opens with a word that only starts like one, ``(文末有彩蛋)``,
``（記者會全文）``, ``【記者手記】``, or tells what befell a reporter, ``（記者遭毆打）``,
``（記者被捕）``, is text)."""

SOURCES = (
    "中央社(?: ?cna)?|中央通訊社|中央通讯社|新華社|新华社|新華網"
    "|新华网|人民網|人民网|人民日報|人民日报|中新網|中新网|中新社|央視新聞"
    "|央视新闻|央視網|央视网|澎湃新聞|澎湃新闻|環球時報|环球时报|環球網"
    "|环球网|自由時報電子報|自由時報|自由时报|自由財經|聯合新聞網|联合新闻网"
    "|udn ?聯合新聞網|聯合報|联合报|經濟日報|经济日报|中時新聞網"
    "|中时新闻网|中國時報|中国时报|工商時報|ettoday ?新聞雲"
    "|ettoday|東森新聞|东森新闻|tvbs ?新聞網|tvbs|公視新聞網"
    "|三立新聞網 ?setn\\.com|三立新聞網|民視新聞|鏡週刊 ?mirror media|鏡週刊|鏡新聞|風傳媒|nownews ?今日新聞"
    "|nownews|yahoo ?奇摩新聞|yahoo ?新聞|蘋果日報|苹果日报"
    "|明報|明报|星島日報|星岛日报|香港01|bbc ?中文網?|德國之聲"
    "|美國之音|美国之音|路透社|法新社|美聯社|美联社"
    "|自由时报电子报|自由财经|udn ?联合新闻网|工商时报|ettoday ?新闻云|tvbs ?新闻网|公视新闻网"
    "|三立新闻网 ?setn\\.com|三立新闻网|民视新闻|镜周刊 ?mirror media|镜周刊|镜新闻|风传媒|nownews ?今日新闻"
    "|yahoo ?奇摩新闻|yahoo ?新闻|bbc ?中文网|德国之声"
    "|reuters|the associated press|associated press|ap news|ap|afp|bloomberg|xinhua|cna|focus taiwan"
    "|taipei times|bbc news|bbc|cnn"
    "|the guardian|npr|nikkei asia|south china morning post|scmp|kyodo news|yonhap|al jazeera"
    "|the new york times|the washington post|financial times|abc news|nbc news|cbs news|fox news|sky news"
    "|民視新聞網|民视新闻网|華視新聞|华视新闻|台視新聞|台视新闻|中視新聞|中视新闻|公視新聞|公视新闻"
    "|鉅亨網|钜亨网|今周刊|商業周刊|商业周刊|天下雜誌|天下杂志|關鍵評論網|关键评论网"
    "|新頭殼(?: ?newtalk)?|新头壳(?: ?newtalk)?|報導者|报导者|yahoo ?奇摩股市|香港電台|香港电台|rthk"
    "|(?:on\\.cc ?)?東網|(?:on\\.cc ?)?东网|文匯報|文汇报|大公報|大公报|新浪新聞|新浪新闻|騰訊新聞|腾讯新闻"
    "|網易新聞|网易新闻|財新網|财新网|第一財經|第一财经|界面新聞|界面新闻|聯合早報|联合早报"
    "|cnbc|the wall street journal|wsj|nhk(?: world-japan| world)?|axios|politico|the independent"
    "|usa today|the straits times|the japan times|hong kong free press(?: hkfp)?|hkfp|voice of america|voa"
    "|dw|france 24|forbes|marketwatch|yahoo finance"
)
"""The news sources whose name a desk or a feed sets after a headline (after NFKC, in any case; the AP as
``AP``, as ``AP News``, the name a news aggregator's feed gives it, and as ``The Associated Press``; a
source with the brand its own page's title and a feed set beside its name, ``三立新聞網 SETN.com``,
``鏡週刊 Mirror Media``), among them the sources a news aggregator's feed names most (``- 民視新聞網``,
``- 鉅亨網``, ``- CNBC``): :data:`SOURCE`."""

SECTIONS = (
    "政治|國際|兩岸|產經|證券|科技|生活|社會|地方|文化|運動|娛樂|日報|娛樂星聞"
    "|国际|两岸|产经|证券|社会|运动|娱乐|日报|娱乐星闻"
)
"""The sections a Taiwanese source's page title, and the feeds that take it, set between a headline and the
source's name (``| 產經 - 中央社 CNA``, ``- 證券 - 工商時報``, ``| 娛樂星聞 | 三立新聞網 SETN.COM``): one
goes with the source's name after it (:data:`SOURCE`), never alone."""

SOURCE = re.compile(
    rf"(?:\s*[|/{DASH_MARKS}]+\s*(?:(?:{SECTIONS})\s*[|/{DASH_MARKS}]+\s*)?(?:{SOURCES})|\s*[(\[【〔]\s*(?:{SOURCES})\s*[)\]】〕]"
    rf"|\s*[(\[【〔]\s*(?:{MEDIA_LABELS})\s*[)\]】〕]|\s*{BYLINE})\s*$",
    re.IGNORECASE,
)
"""What a desk sets after a wire story's headline, read after NFKC (in any case): the name of its source
after a dash, a bar or a slash (``- 中央社``, ``| Reuters``, ``——人民網``, ``- AP``) or in brackets
(``（中央社）``), a byline (:data:`BYLINE`) or a photo or video label (:data:`MEDIA_LABELS`: ``(圖)``);
not a word after a dash that names no source (``- update``), nor a name joined to the word before it by a
hyphen or a slash (:func:`_joined`: ``anti-AP``, ``CNN/AP``); a section between the headline and the
source's name goes with it (:data:`SECTIONS`: ``| 產經 - 中央社 CNA``)."""

CLOSING_SPAN = 96
"""The characters at the end of a text :data:`SOURCE` is looked for in: more than a separator and the
longest source name or byline take, so that a long text costs no more than a headline."""

CLOSING_MARKS = frozenset(DASHES + "|/)]】〕")
"""The marks one of which each closing :data:`SOURCE` holds (a separator or a closing bracket): a text
whose end holds none is not searched."""

MAX_LABELS = 16
"""The most labels, datelines, bylines and source names taken off one text (a desk sets two or three): a cell
closed by thousands of them (``x - AP - AP ...``) cost a search and a copy of the text for each one, ten
seconds for 100,000 characters; the ones after these stay."""

OPENING_BYLINE = re.compile(rf"^\s*{BYLINE}", re.IGNORECASE)
"""A byline (:data:`BYLINE`) that opens a story, after its dateline
(``新華社北京12月6日電（記者王小明）``)."""

DROPPED = ("Z", "P", "Cc", "Cf", "Cs")
"""The Unicode categories a copy key leaves out (the prefixes of a category's name): white space (Z),
punctuation (P), control and format characters and lone surrogates (Cc, Cf, Cs); not a character newer than
the interpreter's Unicode tables (Cn: an emoji or a CJK character of a later Unicode, which a page shows) nor
a private one (Co: a rare name's character a Big5 system's user-defined area maps to), each a character of
the text."""

SYMBOL_MARKS = frozenset("~|" + BOX_LINES)
"""The symbols a copy key reads as punctuation: the forms NFKC gives the full-width tilde ``～`` and bar
``｜`` (Sm) a headline closes with or sets before its source (``颱風來了～``, ``颱風來了｜中央社``), which
the wave dash ``〜`` and the slash ``／``, punctuation, are, and the box-drawing lines set as a dash
(:data:`BOX_LINES`), which the em dash is."""


def copy_key(text: str | Sequence[str]) -> str:
    """What two texts must share to be copies: the text a page shows of it
    (:func:`~nlsim.io.cells.shown_text`), NFKC, case folded, without white space, punctuation,
    control characters and the characters that show nothing whatever their category (a Hangul filler U+3164,
    the blank Braille pattern, a variation selector: :func:`~nlsim.io.cells.unseen`; a copy a CMS sent with
    one looks the same as one without) (``""``: a text with nothing else is nobody's copy); a tilde and a bar
    are punctuation (:data:`SYMBOL_MARKS`). White space or
    punctuation between two digits is kept, as one mark (``.``): ``1.5%`` and ``15%``, ``2-1`` and ``21`` are
    other numbers, where ``1.5%`` and ``1,5 %`` are one; a thousands separator is not part of the number
    (:data:`GROUPING`): ``3,000``, ``3 000`` and ``3000`` are one. A hyphen that joins two letters with no
    space is kept too, as ``-`` (:func:`_hyphenated`): ``re-sign`` is not ``resign``, where ``re - sign``
    (a dash) is, and so is the minus of a negative figure (:func:`_signed`): ``-5`` is not ``5``. A minus
    sign is a hyphen, Big5's tilde and slash as a table decoded them a tilde and a slash, a midline ellipsis
    an ellipsis (:data:`STAND_INS`).
    A flash label that opens the text (:data:`FLASH`: ``【快訊】``, ``快訊／``, ``[Breaking]``,
    ``UPDATE 1-``), a wire's dateline or a byline that opens it (:data:`DATELINE`:
    ``新華社北京12月6日電``, ``BEIJING (Reuters) -``; :data:`OPENING_BYLINE`) and a source's name or a
    byline that closes it (:data:`SOURCE`: ``- 中央社``, ``| Reuters``, ``（記者 王小明）``) are no part of
    it, one after another too, unless nothing would be left: the wire's text with them is the wire's text.
    A text of several fields (a title and a description: a sequence of their non-empty texts) is read
    field by field for those first, then joined by a space: a credit closing the title and a dateline
    opening the description are no part of it either (one field is read as a text is).

    >>> copy_key("  Rain, in TAIPEI!\\u200b "), copy_key("「颱風」來了"), copy_key("...")
    ('rainintaipei', '颱風來了', '')
    >>> copy_key("\\u26a0\\ufe0f Rain\\u3164") == copy_key("\\u26a0 Rain")
    True
    >>> copy_key("上漲 1.5%"), copy_key("上漲15%"), copy_key("１，５"), copy_key("1\\u200b5")
    ('上漲1.5', '上漲15', '1.5', '15')
    >>> copy_key("3,000 jobs"), copy_key("3 000 jobs"), copy_key("1,234,567"), copy_key("2024-05-01")
    ('3000jobs', '3000jobs', '1234567', '2024.05.01')
    >>> copy_key("【快訊】颱風來了"), copy_key("UPDATE 1-Rain"), copy_key("【快訊】"), copy_key("Breaking")
    ('颱風來了', 'rain', '快訊', 'breaking')
    >>> copy_key("新華社北京12月6日電 颱風來了"), copy_key("颱風來了 - 中央社")
    ('颱風來了', '颱風來了')
    >>> copy_key("BEIJING (Reuters) - Rain"), copy_key("Rain - AP")
    ('rain', 'rain')
    >>> copy_key(("Floods - AP", "TAIPEI (CNA) - Rain")), copy_key(("Floods - Reuters", "Rain"))
    ('floodsrain', 'floodsrain')
    """
    fields = [text] if isinstance(text, str) else [str(f) for f in text if str(f).strip()] or [""]
    read = [_seen(unicodedata.normalize("NFKC", shown_text(str(f))).translate(STAND_INS)) for f in fields]
    joined = read[0] if len(read) == 1 else " ".join(_unlabelled(f) for f in read)
    folded = _unlabelled(joined).casefold()
    kept: list[str] = []
    marks = ""  # the visible marks and spaces since the last character kept
    last = -1  # where the last character kept is in ``folded``
    for at, ch in enumerate(folded):
        mark = ch in SYMBOL_MARKS or unicodedata.category(ch)[0] in "ZP"
        if mark or unicodedata.category(ch).startswith(DROPPED) or unseen(ch):
            marks += ch if mark and not unseen(ch) else ""
            continue
        digits = marks and kept and kept[-1].isdecimal() and ch.isdecimal()
        if digits and not _groups(folded, last, marks, at):
            kept.append(".")  # 1.5 is not 15: the mark between two digits is part of the number
        elif marks and kept and _hyphenated(kept[-1], marks, ch):
            kept.append("-")  # re-sign is not resign
        elif marks and ch.isdecimal() and _signed(folded, at):
            kept.append("-")  # -5 is not 5
        kept.append(ch)
        marks, last = "", at
    return "".join(kept)


def _seen(text: str) -> str:
    """``text`` without the characters that show nothing (:func:`~nlsim.io.cells.unseen`), so that one
    before a flash label or a dateline, or after a source's name, hides none of them from
    :func:`_unlabelled` (``\\ufeff【快訊】颱風`` is ``【快訊】颱風``).

    >>> _seen("\u200f【快訊】颱風\u3164 - 中央社\ufeff")
    '【快訊】颱風 - 中央社'
    """
    return text if text.isascii() else unseen_characters().sub("", text)


def _hyphenated(before: str, marks: str, after: str) -> bool:
    """Whether ``marks``, set between the letters ``before`` and ``after``, join them as a hyphen does a
    compound: a hyphen (:data:`HYPHENS`) with no space, between two letters of a script that spaces its
    words (``re-sign``, ``U.S.-China``; not ``re - sign``, a dash, ``F-16``, nor CJK text).

    >>> _hyphenated("e", "-", "s"), _hyphenated("e", " - ", "s"), _hyphenated("f", "-", "1")
    (True, False, False)
    """
    if not any(m in HYPHENS for m in marks) or any(m.isspace() for m in marks):
        return False
    return all(ch.isalpha() and _spaced_word(ch) for ch in (before, after))


def _signed(text: str, at: int) -> bool:
    """Whether the figure at ``text[at]`` has a minus before it: a hyphen, a figure dash or an en dash
    (:data:`SIGNS`; a minus sign is a hyphen, :data:`STAND_INS`) right before it, after a space, a mark,
    CJK text or nothing, not after a letter or a figure of a script that spaces its words (``-5``,
    ``氣溫-5度``, ``(-0.5%)``, ``–5C``; not ``COVID-19``, ``F-16``, nor ``- 5``, a dash set apart).
    ``text`` is :func:`copy_key`'s, which holds no character that shows nothing (:func:`_seen`).

    >>> _signed("temp -5", 6), _signed("氣溫-5度", 3), _signed("covid-19", 6), _signed("x - 5", 4)
    (True, True, False, False)
    >>> _signed("temp \u20135", 6)
    True
    """
    before = at - 1
    if before < 0 or text[before] not in SIGNS:
        return False
    ahead = text[before - 1] if before > 0 else ""
    return not (ahead.isalnum() and _spaced_word(ahead))


def _unlabelled(text: str) -> str:
    """``text`` (NFKC) without what a wire or a desk sets around a story's headline, unless nothing but marks
    would be left of it: the flash labels (:data:`FLASH`), the datelines (:data:`DATELINE`) and the bylines
    (:data:`OPENING_BYLINE`) that open it, and the source names and bylines that close it (:data:`SOURCE`),
    one after another too (:data:`MAX_LABELS` at most).

    >>> _unlabelled("【快訊】【獨家】颱風"), _unlabelled("快訊/ "), _unlabelled("高雄快訊:停班")
    ('颱風', '快訊/ ', '高雄快訊:停班')
    >>> _unlabelled("【快訊】新華社北京12月6日電(記者王小明)颱風 - 中央社"), _unlabelled("颱風 - 更新")
    ('颱風', '颱風 - 更新')
    >>> _unlabelled("BEIJING, Dec 6 (Reuters) - Rain | Reuters"), _unlabelled("- AP")
    ('Rain', '- AP')
    """
    rest = text
    for _ in range(MAX_LABELS):
        opening = _flash(rest) or DATELINE.match(rest) or OPENING_BYLINE.match(rest)
        if opening is not None:
            rest = rest[opening.end() :]
            continue
        tail = max(0, len(rest) - CLOSING_SPAN)  # read at the end only, where a mark opens it
        closing = SOURCE.search(rest, tail) if not CLOSING_MARKS.isdisjoint(rest[tail:]) else None
        if closing is None or _joined(rest, closing):
            break
        rest = rest[: closing.start()]
    rest = rest.strip()
    shown = any(
        not unicodedata.category(ch).startswith(DROPPED) and ch not in SYMBOL_MARKS and not unseen(ch)
        for ch in rest
    )
    return rest if shown else text


def _flash(text: str) -> re.Match[str] | None:
    """The flash label that opens ``text`` (:data:`FLASH`), unless it is the first word of a compound: a
    label written in small letters and ending in one, joined by a hyphen to the letter after it
    (``Flash-flood``, ``Urgent-care``, ``Exclusive-interview``); a wire's label is in capitals
    (``FLASH-``, ``EXCLUSIVE-``), numbered (``Update 1-``) or set apart (``Flash - ``, ``Urgent:``).

    >>> _flash("Flash-flood") is None, _flash("FLASH-Flood").group(), _flash("Update 1-Rain").group()
    (True, 'FLASH-', 'Update 1-')
    """
    found = FLASH.match(text)
    if found is None or found.group("label") is None or found.group("mark") not in HYPHENS:
        return found
    label, after = found.group("label"), text[found.end("mark") : found.end("mark") + 1]
    compound = label[-1].isalpha() and label != label.upper() and after.isalpha()
    return None if compound else found


def _joined(text: str, closing: re.Match[str]) -> bool:
    """Whether the source's name ``closing`` (:data:`SOURCE`) found at the end of ``text`` is joined to the
    word before it by one hyphen or slash with no space on either side (:data:`JOINERS`), a compound or a
    pair of names (``anti-AP``, ``ex-BBC``, ``CNN/AP``) and no credit: both sides letters or figures of a
    script that spaces its words (a credit after CJK text, ``颱風來了-中央社``, ``颱風來了／中央社``,
    is one), and the word before no source's name that closes the text before it (two credits,
    ``- Reuters/AP``).

    >>> text = "Rally turns anti-AP"
    >>> _joined(text, SOURCE.search(text)), _joined("Rally -AP", SOURCE.search("Rally -AP"))
    (True, False)
    >>> _joined("Rally - Reuters/AP", SOURCE.search("Rally - Reuters/AP"))
    False
    """
    start = closing.start()
    if start == 0 or text[start] not in JOINERS:
        return False
    if not (_spaced_word(text[start - 1]) and _spaced_word(text[start + 1 : start + 2])):
        return False
    return SOURCE.search(text, max(0, start - CLOSING_SPAN), start) is None


def _spaced_word(ch: str) -> bool:
    """Whether ``ch`` is a letter or a figure of a script that spaces its words (not a wide CJK one)."""
    return ch.isalnum() and unicodedata.east_asian_width(ch) not in ("W", "F")


def _groups(text: str, last: int, marks: str, at: int) -> bool:
    """Whether ``marks``, between the digit at ``last`` and the one at ``at`` of ``text``, is a number's
    thousands separator (one of :data:`GROUPING`, after one to three digits and before exactly three):
    ``3,000`` is ``3000``, where ``3,0`` and ``2024-05`` keep their mark.

    >>> _groups("3,000", 0, ",", 2), _groups("1,234,567", 4, ",", 6), _groups("1,5", 0, ",", 2)
    (True, True, False)
    """
    if len(marks) != 1 or marks not in GROUPING:
        return False
    before = next((n for n, ch in enumerate(reversed(text[: last + 1])) if not ch.isdecimal()), last + 1)
    after = next((n for n, ch in enumerate(text[at:]) if not ch.isdecimal()), len(text) - at)
    return 1 <= before <= 3 and after == 3


@dataclass(frozen=True)
class Copies:
    """The copy groups of a run's items: ``rep[i]`` is the row of item ``i``'s representative (``i`` itself
    for a representative and for an item without copies); ``ids`` the items' ids, row by row."""

    ids: tuple[str, ...] = ()
    rep: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    parted: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Rows of the representatives of the parts of a copy group that an editor's "not the same story"
    between two of its copies parted (every part of it, sorted): each part is searched for its own
    neighbours, as any representative is; a daily run searches again those an earlier day read as a copy of
    another (:func:`nlsim.dedup.stages.copies`), so that its links are those a batch run finds."""
    same_text: np.ndarray | None = None
    """Each row's first copy of its text, over every part of its copy key (a row's own representative where
    the time window or a verdict made no other part; ``None``: no key has two parts): the parts of one text
    are one neighbour to the search (:func:`nlsim.search.neighbors.neighbor_pairs` with ``same_text``), so
    that a headline sent every day, a group a day, does not fill each day's neighbours with the other
    days' copies, out of the time window."""
    apart: frozenset[tuple[str, str]] = frozenset()
    """The editors' "not the same story" pairs (:func:`~nlsim.clusters.constraints.pair_key`) whose two
    items would be copies of one part without the verdicts: the verdict split them, linked or not
    (:meth:`nlsim.dedup.stages.Grouped.changes`)."""

    @property
    def count(self) -> int:
        """Items that are a copy of another (every member of a group but its representative)."""
        return int((self.rep != np.arange(len(self.rep))).sum())

    @property
    def representatives(self) -> np.ndarray:
        """Rows that stand for themselves (a representative, or an item without copies)."""
        return np.flatnonzero(self.rep == np.arange(len(self.rep)))

    def rep_of(self) -> dict[str, str]:
        """Each copy's representative, by id (items without copies left out): what a cluster rule reads."""
        return {self.ids[i]: self.ids[int(r)] for i, r in enumerate(self.rep) if int(r) != i}

    def groups(self) -> list[list[str]]:
        """The groups of two items or more, by id, representative first, sorted by representative."""
        members: dict[int, list[str]] = defaultdict(list)
        for i, r in enumerate(self.rep):
            if int(r) != i:
                members[int(r)].append(self.ids[i])
        members = {r: [self.ids[r], *copies] for r, copies in members.items()}
        return [members[r] for r in sorted(members, key=lambda r: self.ids[r]) if len(members[r]) > 1]

    def pairs(self, rows: Iterable[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Row pairs ``(representative, copy)`` that link each copy to its representative, each with its
        smaller row first; only those with a side among ``rows`` when given (a daily run: today's items)."""
        copy = np.flatnonzero(self.rep != np.arange(len(self.rep)))
        rep = self.rep[copy]
        if rows is not None:
            wanted = np.zeros(len(self.rep), bool)
            wanted[np.asarray(list(rows), dtype=np.int64)] = True
            keep = wanted[copy] | wanted[rep]
            copy, rep = copy[keep], rep[keep]
        return np.minimum(copy, rep).astype(np.int64), np.maximum(copy, rep).astype(np.int64)


def find_copies(
    ids: Sequence[str],
    texts: Sequence[str | Sequence[str]],
    times: Any = None,
    *,
    window_hours: float | None = None,
    cannot: Iterable[tuple[str, str]] = (),
) -> Copies:
    """The copy groups of items ``ids`` with ``texts`` (in the run's script; an item's text, or its fields'
    texts, :func:`copy_key`) and ``times`` (datetime-like,
    NaT allowed; ``None``: all undated), cut by ``window_hours`` and by the editors' ``cannot`` pairs (see
    the module docstring). Undated copies stay with the first part of their group."""
    ids = [str(i) for i in ids]
    n = len(ids)
    rep = np.arange(n, dtype=np.int64)
    by_key: dict[str, list[int]] = defaultdict(list)
    for i, text in enumerate(texts):
        key = copy_key(text)
        if key:
            by_key[key].append(i)
    if not any(len(rows) > 1 for rows in by_key.values()):
        return Copies(tuple(ids), rep)
    keys = order_keys(ids, times if times is not None else [None] * n)
    partners = _partners(cannot)
    window_ns = None if not window_hours else int(float(window_hours) * 3600e9)
    parted: list[int] = []
    apart: set[tuple[str, str]] = set()
    same_text = rep.copy()
    for rows in by_key.values():
        if len(rows) < 2:
            continue
        rows = sorted(rows, key=lambda r: keys[ids[r]])
        parts = _parts(rows, ids, keys, window_ns, partners)
        for part in parts:
            rep[part] = part[0]
        same_text[rows] = parts[0][0]
        if len(parts) > 1 and _parted_by_verdict([ids[r] for r in rows], partners):
            parted += [part[0] for part in parts]
            apart |= _kept_apart(_parts(rows, ids, keys, window_ns, {}), ids, partners)
    split = same_text if (same_text != rep).any() else None
    return Copies(tuple(ids), rep, np.array(sorted(parted), dtype=np.int64), split, frozenset(apart))


def _kept_apart(
    parts: list[list[int]], ids: list[str], partners: Mapping[str, set[str]]
) -> set[tuple[str, str]]:
    """The pairs of ``partners`` (an editor keeps them apart) whose two items share one of ``parts``."""
    out: set[tuple[str, str]] = set()
    for part in parts:
        inside = {ids[r] for r in part}
        out |= {pair_key(m, o) for m in inside for o in partners.get(m, ()) if o in inside}
    return out


def _partners(cannot: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """The items an editor keeps apart from each item (both ways)."""
    out: dict[str, set[str]] = defaultdict(set)
    for a, b in cannot:
        out[str(a)].add(str(b))
        out[str(b)].add(str(a))
    return out


def _parts(
    rows: list[int], ids: list[str], keys: Mapping[str, Any], window_ns: int | None, partners: Mapping
) -> list[list[int]]:
    """The rows of one copy key (in order) cut into parts: each row joins the first part it fits, within
    the window of the part's first member and kept apart by no editor from any of its members, else starts
    a part of its own.

    Linear in the rows (3,000 copies of one headline were compared member by member, 4.5 million times): a
    part whose first member is more than the window before a dated row is too early for every later dated
    row (they come no earlier), so the search for a dated row's part starts after those; and a row is
    checked against its own partners in the editors' verdicts, not against every member of a part."""
    parts: list[list[int]] = []
    part_of: dict[str, int] = {}  # each placed member's part, by id
    live = 0  # parts before this one are too early for every dated row from here on

    def fits(at: int, mine: Any, r: int) -> bool:
        if _too_early(keys[ids[parts[at][0]]], mine, window_ns):
            return False
        return not any(part_of.get(m) == at for m in partners.get(ids[r], ()))

    for r in rows:
        mine = keys[ids[r]]
        while live < len(parts) and _too_early(keys[ids[parts[live][0]]], mine, window_ns):
            live += 1
        home = next((at for at in range(0 if mine.undated else live, len(parts)) if fits(at, mine, r)), None)
        if home is None:
            home = len(parts)
            parts.append([])
        parts[home].append(r)
        part_of[ids[r]] = home
    return parts


def _too_early(first: Any, mine: Any, window_ns: int | None) -> bool:
    """Whether ``mine`` (an order key) comes more than the window after ``first``, the first member of a
    part (never when either is undated, or without a window)."""
    return window_ns is not None and not first.undated and not mine.undated and mine.ns - first.ns > window_ns


def _parted_by_verdict(members: list[str], partners: Mapping[str, set[str]]) -> bool:
    """Whether an editor keeps two of ``members`` (the items of one copy key) apart."""
    inside = set(members)
    return any(not partners.get(m, set()).isdisjoint(inside) for m in members)


def contract(
    links: Iterable[Any], constraints: LinkConstraints, rep_of: Mapping[str, str]
) -> tuple[list[tuple[str, str, float]], LinkConstraints, dict[str, int]]:
    """The links ``(a, b, score)`` and constraints between representatives, and how many items each stands
    for: each item read as its representative (a copy's links are its group's), a link inside a group
    dropped, the highest score kept per pair; a constraint between two groups holds for the groups."""
    best: dict[tuple[str, str], float] = {}
    for k in links:
        a, b = rep_of.get(k.a, k.a), rep_of.get(k.b, k.b)
        if a == b:
            continue
        key = pair_key(a, b)
        best[key] = max(best.get(key, -np.inf), float(k.score))

    def lifted(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        return [(rep_of.get(a, a), rep_of.get(b, b)) for a, b in pairs]

    lifted_constraints = LinkConstraints.from_pairs(
        must=lifted(constraints.must_link), cannot=lifted(constraints.cannot_link)
    )
    weights: dict[str, int] = defaultdict(lambda: 1)
    for rep in rep_of.values():
        weights[rep] += 1
    return [(a, b, s) for (a, b), s in sorted(best.items())], lifted_constraints, dict(weights)


def expand(groups: Iterable[Sequence[str]], rep_of: Mapping[str, str]) -> list[list[str]]:
    """Groups of representatives as groups of items: each representative with its copies; a copy group
    that no group holds is a group of its own. Sorted lists, sorted by their first id."""
    members: dict[str, list[str]] = defaultdict(list)
    for copy, rep in rep_of.items():
        members[rep].append(copy)
    out: list[list[str]] = []
    placed: set[str] = set()
    for g in groups:
        items = [i for r in g for i in (r, *members.get(r, ()))]
        placed.update(g)
        out.append(sorted(items))
    out += [sorted([rep, *copies]) for rep, copies in members.items() if rep not in placed]
    return sorted(out, key=lambda g: g[0])
