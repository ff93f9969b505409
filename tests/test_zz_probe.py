import itertools, json
from helpers import rule_based_operations, system_prompt, fact_items, between
from assistant.context import Context

async def test_probe(patch_model, chat, store):
    model = patch_model(itertools.repeat("ok"), structured=itertools.repeat(rule_based_operations))
    s1 = await chat("I live in Hangzhou", thread_id="t1")
    print(s1["metrics"])
    s2 = await chat("I moved from Hangzhou to Chengdu", thread_id="t2")
    print(s2["metrics"])
    s3 = await chat("Where should I eat tonight?", thread_id="t3")
    print(s3["metrics"])
    print(system_prompt(model))
    for i in await fact_items(store, "default-user"):
        print(i.key, json.dumps(i.value, indent=1))
    print(model.extraction_prompts[-1])
