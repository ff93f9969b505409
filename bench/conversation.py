"""A deterministic bilingual (English/Chinese) user conversation for the offline benchmarks.

:func:`turns` returns the user's side of one long thread with an assistant: what one
bilingual user types over 1,000 turns. It is built turn by turn from a seeded
``random.Random``, so the same ``(n, seed)`` always gives the same list, and
``turns(100)`` is the first 100 items of ``turns(1000)``.

What the conversation contains (proportions are approximate, for ``seed=7``):

- Turn 1 is a self-introduction: name (:data:`NAME`), city (:data:`HOME_CITY`) and an
  allergy (:data:`ALLERGY`).
- English and Chinese come in stretches of a few to ~30 turns, as a bilingual user
  switches, with the odd one-off message in the other language; about half each overall.
- ~66 % requests and questions: travel planning, cooking, coding help, work emails,
  general explanations. Many contain "I", "my", "me" or "我" without saying anything
  durable ("帮我写一封邮件", "How do I ...", "I'm at the airport in Seoul right now. ...").
- ~19 % personal statements, some followed by a request: preferences, dislikes,
  decisions, projects, a pet, a job, repeats of known facts ("just a reminder ...",
  "don't forget that I'm allergic ..." at turn 880), and at turn :data:`MOVE_TURN` a move
  to :data:`NEW_CITY`. Turn 950 asks "What do you remember about me?".
- ~14 % small talk ("thanks!", "好的", "ok").
- ~1 % long messages: code to review, an email or a Chinese paragraph to polish,
  meeting notes; at turn :data:`LOG_TURN` a CI log of several thousand tokens.

Print a sample and the mix with ``python bench/conversation.py --turns 1000``.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from dataclasses import dataclass

from assistant.inference.tokens import count_text_tokens

__all__ = [
    "ALLERGY",
    "HOME_CITY",
    "LOG_TURN",
    "MOVE_TURN",
    "NAME",
    "NEW_CITY",
    "Turn",
    "script",
    "turns",
]

NAME = "Lin Wei"
HOME_CITY = "Hangzhou"
ALLERGY = "peanuts"
NEW_CITY = "Chengdu"
MOVE_TURN = 540
"""The turn where the user says they moved from :data:`HOME_CITY` to :data:`NEW_CITY`."""
LOG_TURN = 700
"""The turn where the user pastes a CI log larger than the whole context budget."""

FIRST_TURN = (
    f"Hi! My name is {NAME}. I live in {HOME_CITY} and I'm allergic to {ALLERGY}. "
    "I'd like you to help me with everyday stuff: trips, cooking, code and work emails."
)

FIXED: dict[int, tuple[str, str, str]] = {
    # turn: (lang, kind, text)
    1: ("en", "statement", FIRST_TURN),
    35: (
        "en",
        "statement",
        "I work as a data engineer at a logistics startup. "
        "Can you suggest a good book on data pipelines?",
    ),
    120: (
        "en",
        "statement",
        "My cat is called Mochi. She hates car rides; any tips for a three-hour drive?",
    ),
    MOVE_TURN: (
        "en",
        "statement",
        f"Big news: I moved to {NEW_CITY}, so please plan things from there from now on.",
    ),
    880: (
        "en",
        "statement",
        f"Don't forget that I'm allergic to {ALLERGY} when you suggest recipes this week.",
    ),
    950: ("en", "request", "What do you remember about me?"),
}

# --------------------------------------------------------------------------- slot values

EN_PLACES = [
    "Kyoto", "Osaka", "Tokyo", "Seoul", "Singapore", "Bangkok", "Chiang Mai", "Lisbon",
    "Barcelona", "Paris", "Rome", "Istanbul", "Vancouver", "Sydney", "Bali", "Hong Kong",
    "Taipei", "Hanoi", "Reykjavik", "Prague",
]  # fmt: skip
ZH_PLACES = [
    "京都", "大阪", "东京", "首尔", "新加坡", "曼谷", "清迈", "西安", "桂林", "厦门",
    "青岛", "大理", "丽江", "三亚", "香港", "台北", "哈尔滨", "敦煌", "黄山", "张家界",
]  # fmt: skip
EN_MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
]  # fmt: skip
EN_DISHES = [
    "mapo tofu", "egg fried rice", "beef stew", "pad thai", "tomato and egg stir-fry",
    "pork dumplings", "banana bread", "miso ramen", "mushroom risotto", "chicken curry",
]  # fmt: skip
ZH_DISHES = [
    "麻婆豆腐", "红烧肉", "番茄炒蛋", "宫保鸡丁", "酸菜鱼", "饺子", "葱油拌面", "可乐鸡翅",
    "糖醋排骨", "蛋炒饭",
]  # fmt: skip
EN_INGREDIENTS = [
    "tofu", "eggplant", "chicken thighs", "salmon", "mushrooms", "spinach", "rice noodles",
    "sweet potato", "shrimp", "cabbage",
]  # fmt: skip
ZH_INGREDIENTS = ["豆腐", "茄子", "鸡腿", "三文鱼", "香菇", "菠菜", "土豆", "虾仁", "白菜", "牛腩"]
EN_TASKS = [
    "read a large CSV file in chunks", "retry an HTTP request with exponential backoff",
    "parse ISO dates with time zones", "deduplicate a list while keeping the order",
    "run two async functions concurrently", "mock an API call in a unit test",
    "profile a slow function", "merge two nested dictionaries",
    "stream a big JSON file without loading it all", "schedule a job every night at 2am",
]  # fmt: skip
ZH_TASKS = [
    "按块读取很大的CSV文件", "给HTTP请求加指数退避重试", "解析带时区的日期", "列表去重但保持顺序",
    "并发运行两个异步函数", "在单元测试里模拟API调用", "分析一个很慢的函数", "合并两个嵌套字典",
]  # fmt: skip
EN_ERRORS = [
    ("KeyError", "delete keys while iterating over a dict"),
    ("UnicodeDecodeError", "read a file with Chinese text"),
    ("ModuleNotFoundError", "import my package from a test"),
    ("RuntimeError: event loop is closed", "call an async function from sync code"),
    ("TypeError: 'NoneType' object is not subscriptable", "parse an empty API response"),
    ("RecursionError", "serialise a tree of objects"),
]
ZH_ERRORS = [
    ("KeyError", "遍历字典时删除键"),
    ("UnicodeDecodeError", "读取中文文件"),
    ("ModuleNotFoundError", "在测试里导入自己的包"),
    ("RuntimeError", "在同步代码里调用异步函数"),
]
EN_PAIRS = [
    "a process and a thread", "a list and a tuple", "asyncio.gather and asyncio.wait",
    "git merge and git rebase", "__str__ and __repr__", "TCP and UDP",
]  # fmt: skip
ZH_PAIRS = ["进程和线程", "git merge和git rebase", "列表和元组", "TCP和UDP", "乐观锁和悲观锁"]
EN_SQL = [
    "finds the top five customers by revenue each month", "counts daily active users",
    "finds duplicate email addresses", "computes a seven-day rolling average of orders",
]  # fmt: skip
ZH_SQL = ["找出每个月收入最高的五个客户", "统计每日活跃用户", "找出重复的邮箱地址"]
EN_RECIPIENTS = ["manager", "client", "team", "landlord", "HR contact", "supplier"]
ZH_RECIPIENTS = ["经理", "客户", "团队", "房东", "人事", "供应商"]
EN_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
ZH_DAYS = ["周一", "周二", "周三", "周四", "周五"]
EN_CASUAL = [
    "hey, the report is gonna be late again, sorry",
    "can u send me the numbers asap",
    "we kinda messed up the deploy yesterday",
    "no idea why the budget doubled, will check",
]
ZH_CASUAL = [
    "报告又要晚点交了不好意思", "数据你尽快发我一下", "昨天上线出了点问题",
    "预算怎么翻倍了我再看看",
]  # fmt: skip
EN_CONCEPTS = [
    "compound interest", "how vaccines work", "inflation", "the CAP theorem",
    "what an index fund is", "how jet lag works", "why the sky is blue",
]  # fmt: skip
ZH_CONCEPTS = ["复利", "通货膨胀", "区块链", "指数基金", "量子计算", "时差反应"]

EN_SMALLTALK = [
    "thanks!", "ok", "ok thanks", "great, thank you!", "got it", "cool", "perfect",
    "makes sense", "haha nice", "that helps a lot, thanks", "sounds good", "nice 👍",
]  # fmt: skip
ZH_SMALLTALK = [
    "好的", "谢谢！", "嗯嗯", "明白了", "太好了，谢谢", "收到", "好的，谢谢", "哈哈，不错", "懂了",
    "好",
]  # fmt: skip

EN_PREFERENCES = [
    "window seats on long flights", "short answers with bullet points",
    "trains over planes for short trips", "small guesthouses over big hotels",
    "dark roast coffee", "metric units in recipes", "working early in the morning",
    "code examples in Python", "emails that get to the point", "aisle seats on short flights",
    "vegetarian dishes on weekdays",
]  # fmt: skip
EN_LIKES = [
    "spicy Sichuan food", "hiking in the mountains", "old jazz records",
    "Japanese woodblock prints", "cooking on weekends", "quiet cafes", "street photography",
    "long train journeys", "board games with friends", "Cantonese dim sum",
]  # fmt: skip
EN_DISLIKES = [
    "cilantro", "crowded tourist spots", "long layovers", "very sweet desserts",
    "video calls before nine", "red-eye flights", "overly formal emails", "raw onions",
]  # fmt: skip
EN_DECISIONS = [
    "learn Rust this year", "take the train to Shanghai next week", "switch to a standing desk",
    "stop drinking coffee after three", "run a half marathon in October",
    "start a vegetable garden on my balcony", "book the Kyoto trip for April",
    "move my savings into an index fund", "cook at home four nights a week",
    "take Mandarin calligraphy classes", "stop checking email after eight",
]  # fmt: skip
EN_PROJECTS = [
    "a recommendation service for our app", "a budgeting app for my parents",
    "a migration of our reports to dbt", "a small blog about Sichuan cooking",
]  # fmt: skip
ZH_LIKES = [
    "吃辣", "爬山", "喝乌龙茶", "看科幻小说", "周末做饭", "安静的咖啡馆", "拍街景", "听播客",
    "骑自行车",
]  # fmt: skip
ZH_DISLIKES = ["香菜", "太甜的甜点", "人多的景点", "红眼航班", "开很长的会", "生洋葱"]
ZH_DECISIONS = [
    "今年学日语", "下个月开始健身", "国庆去云南", "每天早上跑步", "换一台轻一点的笔记本",
    "周末不看工作消息", "明年考驾照", "少喝奶茶",
]  # fmt: skip
ZH_PROJECTS = ["一个记账小程序", "公司的数据迁移项目", "一个读书笔记网站"]


@dataclass(frozen=True)
class Turn:
    """One user message and what it is, for reporting."""

    number: int
    """1-based turn number."""
    text: str
    lang: str
    """``en`` or ``zh``."""
    kind: str
    """``request``, ``statement`` (says something durable about the user, maybe with a
    request), ``smalltalk`` or ``long``."""


# --------------------------------------------------------------------------- builders


def _en_request(rng: random.Random) -> str:
    place, other = rng.sample(EN_PLACES, 2)
    month, days = rng.choice(EN_MONTHS), rng.randint(2, 10)
    dish, (ing, ing2) = rng.choice(EN_DISHES), rng.sample(EN_INGREDIENTS, 2)
    error, action = rng.choice(EN_ERRORS)
    recipient, day = rng.choice(EN_RECIPIENTS), rng.choice(EN_DAYS)
    options = [
        # travel
        f"Can you help me plan a {days}-day trip to {place} in {month}?",
        f"What's the best way to get from the airport to the city centre in {place}?",
        f"Is {month} a good time to visit {place}, or is it too crowded?",
        f"Which area of {place} is best to stay in for a first visit?",
        f"What should I pack for {days} days in {place} in {month}?",
        f"Are there any day trips from {place} worth doing?",
        f"How much cash should I bring for {days} days in {place}?",
        f"Compare taking the train versus flying from {place} to {other}.",
        f"What are three must-try local dishes in {place}?",
        # cooking
        f"How do I make {dish} at home?",
        f"Give me a 30-minute dinner recipe with {ing} and {ing2}.",
        f"What can I use instead of {ing} in {dish}?",
        f"How long do leftovers with {ing} keep in the fridge?",
        f"Why does my {dish} always turn out too salty?",
        f"Write a shopping list for {dish} for {rng.randint(2, 8)} people.",
        # coding
        f"How do I {rng.choice(EN_TASKS)} in Python?",
        f"Why do I get {error} when I {action}?",
        f"What's the difference between {rng.choice(EN_PAIRS)}?",
        f"Can you write a SQL query that {rng.choice(EN_SQL)}?",
        f"Write a Python function to {rng.choice(EN_TASKS)}, with type hints.",
        # work emails
        f"Draft a polite email to my {recipient} asking to move our meeting to {day}.",
        f"Help me write a follow-up email to a client who hasn't paid invoice "
        f"#{rng.randint(1000, 9999)}.",
        f"Write a short note to the team announcing that the release slips to {day}.",
        f"Can you make this sound more professional: '{rng.choice(EN_CASUAL)}'",
        f"Write a reply declining the vendor demo on {day} without sounding rude.",
        # general
        f"Explain {rng.choice(EN_CONCEPTS)} in simple terms.",
        f"How can I sleep better after flying back from {place}?",
        # first-person context that is not durable
        f"I'm at the airport in {place} right now. What's the fastest way downtown?",
        f"I have a call with my {recipient} on {day}. Help me prepare three talking points.",
        "I need to send the quarterly report by Friday. How should I structure it?",
        f"We're {rng.randint(2, 6)} people with {days} days. Where should we stay in {place}?",
        f"I just tried your {dish} recipe. It came out too dry; what went wrong?",
    ]
    return rng.choice(options)


def _zh_request(rng: random.Random) -> str:
    place, other = rng.sample(ZH_PLACES, 2)
    month, days = rng.randint(1, 12), rng.randint(2, 10)
    dish, (ing, ing2) = rng.choice(ZH_DISHES), rng.sample(ZH_INGREDIENTS, 2)
    error, action = rng.choice(ZH_ERRORS)
    recipient, day = rng.choice(ZH_RECIPIENTS), rng.choice(ZH_DAYS)
    options = [
        # travel
        f"帮我规划一下{month}月去{place}的{days}天行程。",
        f"{place}有哪些值得去但人不多的地方？",
        f"从{place}到{other}坐高铁还是飞机更划算？",
        f"{month}月去{place}要带什么衣服？",
        f"{place}住哪个区域比较方便？",
        f"在{place}玩{days}天大概要准备多少预算？",
        f"{place}有什么必吃的本地小吃？",
        # cooking
        f"{dish}怎么做才好吃？",
        f"家里有{ing}和{ing2}，晚饭可以做点什么？",
        f"做{dish}没有{ing}可以用什么代替？",
        f"{ing}在冰箱里能放几天？",
        f"帮我列一个{rng.randint(2, 8)}个人吃的{dish}购物清单。",
        # coding
        f"Python里怎么{rng.choice(ZH_TASKS)}？",
        f"为什么我{action}的时候会报{error}？",
        f"{rng.choice(ZH_PAIRS)}有什么区别？",
        f"帮我写一个SQL，{rng.choice(ZH_SQL)}。",
        # work emails
        f"帮我写一封邮件给{recipient}，说明项目要延期到{day}。",
        f"帮我把这句话改得正式一点：“{rng.choice(ZH_CASUAL)}”",
        f"给客户写一封催款邮件，发票号是{rng.randint(1000, 9999)}，语气客气一点。",
        f"写一段通知，告诉大家{day}下午的会议取消了。",
        # general
        f"简单解释一下{rng.choice(ZH_CONCEPTS)}。",
        f"从{place}回来总是倒不过时差，有什么办法？",
        # first-person context that is not durable
        f"我下周要和{recipient}开会。帮我准备一下要点。",
        f"我刚照着你的方子做了{dish}。有点咸，怎么补救？",
        f"我们{rng.randint(2, 6)}个人去{place}玩{days}天。住哪里比较好？",
        f"我现在在{place}机场，去市区怎么走最快？",
    ]
    return rng.choice(options)


def _en_statement(rng: random.Random) -> str:
    options = [
        f"I prefer {rng.choice(EN_PREFERENCES)}.",
        f"I really like {rng.choice(EN_LIKES)}.",
        f"I don't like {rng.choice(EN_DISLIKES)}.",
        f"I've decided to {rng.choice(EN_DECISIONS)}.",
        f"I'm working on {rng.choice(EN_PROJECTS)}.",
        f"Just a reminder that I'm allergic to {ALLERGY}.",
    ]
    statement = rng.choice(options)
    if rng.random() < 0.4:
        statement += " " + _en_request(rng)
    return statement


def _zh_statement(rng: random.Random) -> str:
    options = [
        f"我喜欢{rng.choice(ZH_LIKES)}。",
        f"我不喜欢{rng.choice(ZH_DISLIKES)}。",
        f"我决定{rng.choice(ZH_DECISIONS)}。",
        f"我在做{rng.choice(ZH_PROJECTS)}。",
        "提醒一下，我对花生过敏。",
    ]
    statement = rng.choice(options)
    if rng.random() < 0.4:
        statement += _zh_request(rng)
    return statement


_CODE_LINES = [
    "    rows = load_rows(path)",
    "    for row in rows:",
    "        if row['status'] == 'active':",
    "            totals[row['region']] += row['amount']",
    "    result = {k: round(v, 2) for k, v in totals.items()}",
    "    cache[key] = result",
    "    logger.info('processed %d rows', len(rows))",
    "    if not result:",
    "        raise ValueError('no active rows')",
    "    session = requests.Session()",
    "    response = session.get(url, timeout=10)",
    "    data = response.json()['items']",
    "    items = sorted(data, key=lambda item: item['created_at'])",
    "    await asyncio.sleep(delay)",
    "    delay = min(delay * 2, 30)",
    "    return result",
]


def _long_message(rng: random.Random, lang: str) -> str:
    if lang == "en":
        if rng.random() < 0.5:
            body = [f"def summarize_{rng.choice(['orders', 'sales', 'events'])}(path, key):"]
            body += [rng.choice(_CODE_LINES) for _ in range(rng.randint(30, 80))]
            return (
                "Can you review this function? It is slow and sometimes returns stale data.\n"
                "```python\n" + "\n".join(body) + "\n```"
            )
        sentences = [
            "Thank you for meeting with us last week to discuss the rollout plan.",
            "As agreed, we will migrate the reporting jobs in three phases.",
            "The first phase covers the nightly batch jobs and should finish by the end "
            "of the month.",
            "We noticed some delays in the data deliveries from your side.",
            "Could you confirm the new delivery schedule by Friday?",
            "Our team will be available for a review call next Tuesday afternoon.",
            "Please let us know if the updated pricing works for your finance team.",
            "We also attached the revised timeline and the list of open questions.",
            "Any changes to scope will need sign-off from both project leads.",
            "We appreciate your patience while we fix the dashboard issues.",
        ]
        text = " ".join(rng.choice(sentences) for _ in range(rng.randint(14, 30)))
        return "Please polish this email to a client and keep it friendly:\n\n" + text
    sentences = [
        "本季度我们团队完成了数据平台的迁移工作，整体进度比计划提前了两周。",
        "在迁移过程中遇到了几次数据延迟的问题，已经和供应商沟通并确定了解决方案。",
        "下个季度的重点是提升报表的稳定性，并且减少人工处理的环节。",
        "预算方面，服务器费用比去年增加了百分之十五，主要原因是数据量增长。",
        "希望领导能支持我们增加一名数据工程师，以保证项目按时交付。",
        "另外，客户反馈的几个问题已经在上周修复，目前没有新的投诉。",
        "我们计划在下个月组织一次内部培训，帮助业务同事更好地使用新系统。",
        "以上是本季度的主要工作总结，请各位领导审阅。",
    ]
    text = "".join(rng.choice(sentences) for _ in range(rng.randint(10, 30)))
    if rng.random() < 0.5:
        return "帮我润色一下这段话，要发给领导的：\n\n" + text
    return "下面是今天的会议记录，帮我整理成要点：\n\n" + text


def _ci_log(rng: random.Random) -> str:
    steps = ["checkout", "setup-python", "install", "lint", "unit-tests", "build", "upload"]
    lines = []
    for index in range(240):
        step = steps[min(index // 35, len(steps) - 1)]
        level = rng.choice(["INFO", "INFO", "INFO", "DEBUG", "WARN"])
        lines.append(
            f"2026-03-0{1 + index // 200}T10:{index // 60:02d}:{index % 60:02d}Z [{level}] "
            f"{step}: worker-{rng.randint(1, 8)} processed chunk {index} "
            f"({rng.randint(10, 999)} items, {rng.randint(1, 900)} ms)"
        )
    lines.append("2026-03-02T10:59:59Z [ERROR] unit-tests: test_rollup_totals FAILED")
    return "Our CI keeps failing. Here's the full log; what's going wrong?\n\n" + "\n".join(lines)


# --------------------------------------------------------------------------- the script


def script(n: int, seed: int = 7) -> list[Turn]:
    """The first ``n`` turns of the conversation for ``seed``, with their language and kind."""
    rng = random.Random(seed)
    lang, stretch = "en", rng.randint(8, 25)
    result: list[Turn] = []
    for number in range(1, n + 1):
        if stretch <= 0:
            lang, stretch = ("zh" if lang == "en" else "en"), rng.randint(3, 30)
        stretch -= 1
        here = lang if rng.random() >= 0.05 else ("zh" if lang == "en" else "en")
        roll = rng.random()
        if number in FIXED:
            here, kind, text = FIXED[number]
        elif number == LOG_TURN:
            here, kind, text = "en", "long", _ci_log(rng)
        elif roll < 0.009:
            kind, text = "long", _long_message(rng, here)
        elif roll < 0.16:
            kind = "smalltalk"
            text = rng.choice(EN_SMALLTALK if here == "en" else ZH_SMALLTALK)
        elif roll < 0.34:
            kind = "statement"
            text = _en_statement(rng) if here == "en" else _zh_statement(rng)
        else:
            kind = "request"
            text = _en_request(rng) if here == "en" else _zh_request(rng)
        result.append(Turn(number=number, text=text, lang=here, kind=kind))
    return result


def turns(n: int, seed: int = 7) -> list[str]:
    """The user's first ``n`` messages of the conversation for ``seed``."""
    return [turn.text for turn in script(n, seed)]


def describe(script_turns: list[Turn]) -> str:
    """A few lines on the mix of languages, kinds and sizes, for the benchmarks' headers."""
    total = len(script_turns) or 1
    langs = Counter(turn.lang for turn in script_turns)
    kinds = Counter(turn.kind for turn in script_turns)
    tokens = [count_text_tokens(turn.text) for turn in script_turns]
    mix = ", ".join(
        f"{kind} {100 * kinds[kind] / total:.0f}%"
        for kind in ("request", "statement", "smalltalk", "long")
    )
    return (
        f"{len(script_turns)} user turns: en {100 * langs['en'] / total:.0f}% / "
        f"zh {100 * langs['zh'] / total:.0f}%; {mix}; "
        f"user tokens/turn mean {sum(tokens) / total:.0f}, max {max(tokens, default=0)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000, help="conversation length")
    parser.add_argument("--seed", type=int, default=7, help="random seed")
    parser.add_argument("--show", type=int, default=25, help="how many turns to print")
    args = parser.parse_args()
    conversation = script(args.turns, args.seed)
    print(describe(conversation))
    for turn in conversation[: args.show]:
        text = turn.text if len(turn.text) <= 90 else turn.text[:87] + "..."
        print(f"{turn.number:>5} {turn.lang} {turn.kind:<9} {text!r}")


if __name__ == "__main__":
    main()
