"""The analysis both search backends share (labapp/search/analysis.py, issue 34 §1): it
folds accents as Whoosh did, without Whoosh, and a clause asks for the words a document is
stored with."""
from __future__ import annotations

from whoosh.support.charset import accent_map

from labapp.search import analysis
from labapp.search.accents import ACCENT_MAP


def test_the_accent_table_is_whooshs() -> None:
    assert dict(accent_map) == ACCENT_MAP


def test_identifiers_their_parts_and_pairs() -> None:
    document = analysis.Document(id="SAM0001", eclass="Sample", labels=frozenset(),
                                 key_text=analysis.text_of(("SAM0001", "Ĉell K-12")),
                                 text=analysis.text_of(("SAM0001", "Ĉell K-12", "pH7.4 buffer")))
    words = analysis.words_of(document)
    assert words.text == ["sam0001", "cell", "k-12", "k", "12", "ph7.4", "ph7", "4", "buffer"]
    assert words.pairs == ["cell\u00a0k-12", "ph7.4\u00a0buffer"]  # within a part only
    assert words.prefixes[:3] == ["sa", "sam", "sam0"]


def test_clauses_ask_for_stored_words() -> None:
    assert analysis.terms_of(analysis.WORD, "Ĉell") == analysis.Terms(word="cell")
    assert analysis.terms_of(analysis.PHRASE, "pH7.4 Buffer") == analysis.Terms(
        pairs=("ph7.4\u00a0buffer",))
    assert analysis.terms_of(analysis.PREFIX, "SA") == analysis.Terms(stem="sa", ngram=True)
    assert analysis.terms_of(analysis.WORD, "--").nothing


def test_words_without_prefixes_keep_the_text_and_count_the_key_words() -> None:
    """The PostgreSQL backend stores no n-grams: it asks for the words alone, and how many
    of them are key words (they weigh most in its ranking)."""
    document = analysis.Document(id="SAM0001", eclass="Sample", labels=frozenset(),
                                 key_text=analysis.text_of(("SAM0001", "Ĉell K-12")),
                                 text=analysis.text_of(("SAM0001", "Ĉell K-12", "pH7.4 buffer")))
    full, bare = analysis.words_of(document), analysis.words_of(document, prefixes=False)
    assert (bare.text, bare.pairs) == (full.text, full.pairs)
    assert bare.prefixes == []
    assert bare.keys == full.keys == 5  # sam0001, cell, k-12, k, 12
