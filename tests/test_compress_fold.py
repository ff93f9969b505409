from langchain_core.messages import AIMessage, HumanMessage

from assistant.nodes.compress import fold_end
from assistant.run.history import format_transcript


def turns(count: int, size: int) -> list:
    messages = []
    for i in range(count):
        messages += [HumanMessage(f"q{i} " + "x" * size), AIMessage(f"a{i} " + "y" * size)]
    return messages


def test_fold_end_takes_everything_that_fits() -> None:
    messages = turns(3, 40)
    assert fold_end(messages, max_tokens=10_000) == len(messages)


def test_fold_end_stops_before_a_human_message_when_over_the_cap() -> None:
    messages = turns(10, 400)  # about 100 tokens per message
    end = fold_end(messages, max_tokens=450)
    assert 0 < end < len(messages)
    assert isinstance(messages[end], HumanMessage)
    transcript = format_transcript(messages[:end])
    assert "q0" in transcript and f"q{end // 2}" not in transcript


def test_fold_end_always_takes_the_first_turn() -> None:
    messages = turns(3, 4000)
    assert fold_end(messages, max_tokens=10) == 2
