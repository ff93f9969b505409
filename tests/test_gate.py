"""The extraction gate: which user messages reach the extraction call at all."""

from __future__ import annotations

import pytest

from assistant.nodes.remember import worth_extracting

KEPT = [
    # a lasting fact in a clause about this moment still counts
    "I'm working from home right now because I live far from the office.",
    "I'm allergic to shellfish, and I'm at a seafood place right now. What can I eat?",
    "我现在住在成都，周末去哪里玩？",
    "我现在在一家银行工作。",
    "我现在在学日语，有什么播客推荐？",
    "I just tried your recipe and I love it; I'm vegetarian, by the way.",
    # a lead-in that does not ask for anything keeps what follows it
    "A few things about me:\nI live in Oslo and I have two cats.",
    # a fact before the lead-in of a request stays
    "I'm vegetarian. Please adapt this recipe:\n\nTwo eggs, one onion, some bacon.",
    "我对花生过敏，帮我改一下这个菜谱：\n\n花生酱拌面，加一勺花生碎。",
    # plans and deadlines are facts the extractor decides on
    "I need to send the quarterly report by Friday. How should I structure it?",
    "I'm moving to Berlin next week; what should I pack?",
    "I'm flying to Tokyo on Friday, what should I pack?",
    "我下周去日本出差，需要办签证吗？",
    "I have a weekly call with my mother every Sunday, she lives in Leeds.",
]

SKIPPED = [
    # where the user is right now: the context of the question
    "I'm at the airport in Seoul right now. What's the fastest way downtown?",
    "At the moment I'm stuck in traffic, can you reschedule my reminder?",
    "我现在在首尔机场，去市区怎么走最快？",
    "这会儿我在地铁上，帮我写一段通知。",
    # an appointment in the next few days: a calendar entry, not a durable fact
    "I have a call with my manager on Friday. Help me prepare three talking points.",
    "I've got a dentist appointment tomorrow, any tips for staying calm?",
    "我下周要和团队开会。帮我准备一下要点。",
    "明天下午和客户见面，帮我写个开场白。",
    # how the assistant's own suggestion turned out
    "I just tried your miso ramen recipe. It came out too dry; what went wrong?",
    "I followed your advice on the packing list. What else for the beach?",
    "我刚照着你的方子做了蛋炒饭。有点咸，怎么补救？",
    # material pasted after a request's lead-in, or in a fenced block
    "Please polish this email to a client and keep it friendly:\n\n"
    "We moved the reporting jobs. I think we will finish by Friday.",
    "帮我润色一下这段话，要发给领导的：\n\n我们计划在下个月组织一次内部培训。",
    "下面是今天的会议记录，帮我整理成要点：\n\n本季度我们团队完成了数据平台的迁移工作。",
    "Can you review this function?\n```python\n# I wrote this for my team\nreturn rows\n```",
]


@pytest.mark.parametrize("text", KEPT)
def test_a_message_that_may_state_a_fact_reaches_extraction(text: str) -> None:
    assert worth_extracting(text)


@pytest.mark.parametrize("text", SKIPPED)
def test_a_message_that_states_nothing_lasting_is_skipped(text: str) -> None:
    assert not worth_extracting(text)
