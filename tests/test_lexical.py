"""Keyword search: the CJK-aware tokenizer and the in-place BM25 index."""

from __future__ import annotations

import pytest

from assistant.memory.search import lexical
from assistant.memory.search.lexical import STOP_WORDS, BM25Index, tokenize


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("I'm allergic to peanuts", ["allerg", "peanut"]),
        ("The cats and the dogs", ["cat", "dog"]),  # stop words out, stemmed
        ("Alice's berries", ["alic", "berri"]),  # possessive out, Snowball stems
        ("class status bus", ["class", "status", "bus"]),  # not plurals
        ("What is my wife's name?", ["wife", "name"]),
        ("Room 7, floor B", ["room", "7", "floor"]),  # digits stay, single letters go
        ("ＨＡＮＧＺＨＯＵ", ["hangzhou"]),  # full-width folded
        ("went camping, camped, camps", ["went", "camp", "camp", "camp"]),
        ("", []),
        ("the and of", []),
    ],
)
def test_tokenize_english(text: str, terms: list[str]) -> None:
    assert tokenize(text) == terms


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("Книги и книга", ["книг", "книг"]),  # Cyrillic: the Russian stemmer
        ("οι γάτες, η γάτα", ["οι", "γατ", "γατ"]),  # Greek: the Greek stemmer
        ("les cafés du café", ["les", "café", "du", "café"]),  # accented Latin: folded only
    ],
)
def test_tokenize_stems_by_the_script_that_tells_the_language(text: str, terms: list[str]) -> None:
    assert tokenize(text) == terms


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("我对花生过敏", ["我对", "对花", "花生", "生过", "过敏"]),
        ("猫", ["猫"]),  # a lone character is its own term
        ("住在杭州。喜欢茶", ["住在", "在杭", "杭州", "喜欢", "欢茶"]),  # punctuation splits runs
        ("住在Hangzhou西湖", ["住在", "hangzhou", "西湖"]),
        ("我的猫叫Mochi", ["我的", "的猫", "猫叫", "mochi"]),
    ],
)
def test_tokenize_chinese_into_bigrams(text: str, terms: list[str]) -> None:
    assert tokenize(text) == terms


def test_jieba_words_can_be_switched_on_for_the_ablation(monkeypatch: pytest.MonkeyPatch) -> None:
    assert tokenize("我开始上钢琴课了") == ["我开", "开始", "始上", "上钢", "钢琴", "琴课", "课了"]
    monkeypatch.setattr(lexical, "CJK_MODE", "both")  # bigrams, then words of 3+ characters
    assert tokenize("我开始上钢琴课了") == [
        *["我开", "开始", "始上", "上钢", "钢琴", "琴课", "课了"],
        "钢琴课",
    ]
    monkeypatch.setattr(lexical, "CJK_MODE", "words")
    assert tokenize("我开始上钢琴课了") == ["我", "开始", "上", "钢琴", "钢琴课", "了"]


def test_stemming_can_be_switched_off_for_the_ablation(monkeypatch: pytest.MonkeyPatch) -> None:
    assert tokenize("hiking hiked hikes berries") == ["hike", "hike", "hike", "berri"]
    monkeypatch.setattr(lexical, "STEM", False)
    assert tokenize("hiking hiked berries") == ["hiking", "hiked", "berry"]  # plurals folded


def test_the_previous_turn_counts_at_its_weight(monkeypatch: pytest.MonkeyPatch) -> None:
    def build() -> BM25Index:
        index = BM25Index()
        index.add("answer", "Biscuit, the kids picked it.", context="Aww, what name did you pick?")
        index.add("named", "Biscuit is a good name for a dog.")
        index.add("other", "The kids are at school.")
        return index

    # The answer turn is found through the question before it, below a turn that says it.
    assert [key for key, _ in build().search("the dog's name", limit=3)] == ["named", "answer"]
    monkeypatch.setattr(lexical, "CONTEXT_WEIGHT", 0.0)
    assert [key for key, _ in build().search("the dog's name", limit=3)] == ["named"]


def test_tags_are_exact_and_leave_with_their_key() -> None:
    index = BM25Index()
    index.add("a", "Went hiking", tags=["speaker:li", "date:2023-05-06"])
    index.add("b", "Went swimming", tags=["speaker:wang"])
    assert index.tagged("speaker:li") == {"a"}
    assert index.tags_of_kind("speaker") == ["speaker:li", "speaker:wang"]
    assert index.search("speaker li", limit=5) == []  # tags never count as words
    index.remove("a")
    assert index.tagged("speaker:li") == set()
    assert index.tags_of_kind("speaker") == ["speaker:wang"]
    assert index.tags_of_kind("date") == []


def test_stop_words_never_come_out() -> None:
    assert not set(tokenize(" ".join(sorted(STOP_WORDS)))) & STOP_WORDS


def test_bm25_add_search_remove_and_replace() -> None:
    index = BM25Index()
    assert index.search("peanut", limit=5) == []
    index.add("a", "Allergic to peanuts")
    index.add("b", "住在杭州")
    index.add("c", "Likes green tea")
    assert len(index) == 3
    assert "a" in index and "z" not in index

    assert [key for key, _ in index.search("peanut allergy", limit=5)] == ["a"]
    assert [key for key, _ in index.search("杭州在哪里", limit=5)] == ["b"]
    assert index.search("violin", limit=5) == []

    index.add("a", "Allergic to shellfish")  # replaces, never duplicates
    assert len(index) == 3
    assert index.search("peanuts", limit=5) == []
    assert [key for key, _ in index.search("shellfish", limit=5)] == ["a"]

    index.remove("b")
    index.remove("b")  # removing twice is harmless
    index.remove("never-added")
    assert len(index) == 2
    assert "b" not in index
    assert index.search("杭州", limit=5) == []


def test_bm25_scores_rare_terms_higher_and_best_first() -> None:
    index = BM25Index()
    index.add("tea", "Likes green tea")
    index.add("tea-2", "Likes oolong tea")
    index.add("mochi", "Likes Mochi the cat")
    results = index.search("likes mochi", limit=3)
    assert [key for key, _ in results][0] == "mochi"  # "mochi" is rarer than "likes"
    scores = [score for _, score in results]
    assert scores == sorted(scores, reverse=True)
    assert all(score > 0 for score in scores)
    assert len(index.search("likes", limit=2)) == 2


def test_bm25_ties_are_ordered_by_key_whatever_the_insertion_order() -> None:
    first, second = BM25Index(), BM25Index()
    for key in ["b", "c", "a"]:
        first.add(key, "Likes green tea")
    for key in ["a", "c", "b"]:
        second.add(key, "Likes green tea")
    expected = [key for key, _ in first.search("green tea", limit=3)]
    assert expected == ["a", "b", "c"]
    assert first.search("green tea", limit=3) == second.search("green tea", limit=3)
    assert first.search("green tea", limit=3) == first.search("green tea", limit=3)
    assert [key for key, _ in first.search("green tea", limit=2)] == ["a", "b"]


def test_bm25_statistics_stay_right_after_removals() -> None:
    """Removing and re-adding gives the same scores as building afresh."""
    churned = BM25Index()
    for key, text in [("x", "Plays the violin"), ("y", "Likes green tea"), ("z", "Has a cat")]:
        churned.add(key, text)
    churned.remove("x")
    churned.add("z", "Has a cat named Mochi")

    fresh = BM25Index()
    fresh.add("y", "Likes green tea")
    fresh.add("z", "Has a cat named Mochi")
    for query in ["cat", "green tea", "violin", "mochi tea"]:
        got, want = churned.search(query, limit=5), fresh.search(query, limit=5)
        assert [key for key, _ in got] == [key for key, _ in want]
        assert [score for _, score in got] == pytest.approx([score for _, score in want])


def test_weighted_scores_add_up_over_terms_and_can_be_limited_to_some_keys() -> None:
    """What recall's keyword feedback (RM3) relies on: BM25 is a weighted sum over terms."""
    index = BM25Index()
    index.add("studio", "My dance studio opens downtown")
    index.add("rent", "Rents downtown went up")
    index.add("tea", "Likes green tea")
    both = index.scores({"studio": 0.7, "downtown": 0.3})
    apart = [index.scores({"studio": 0.7}), index.scores({"downtown": 0.3})]
    assert both == pytest.approx({key: sum(part.get(key, 0.0) for part in apart) for key in both})
    assert set(both) == {"studio", "rent"}  # only texts holding a term
    assert index.scores({"downtown": 1.0}, among=["rent", "tea"]) == {
        "rent": index.scores({"downtown": 1.0})["rent"]
    }
    assert [key for key, _ in index.search_weighted({"studio": 0.1, "rent": 1.0}, limit=1)] == [
        "rent"
    ]
    assert index.holding("downtown") == 2 and index.holding("violin") == 0
    assert index.term_counts("rent") == {"rent": 1.0, "downtown": 1.0, "went": 1.0, "up": 1.0}
