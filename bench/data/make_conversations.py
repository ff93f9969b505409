"""Generate the long-conversation recall benchmark (English and Chinese), deterministically.

Run:  python bench/data/make_conversations.py
Writes bench/data/conversations.json next to this script. Only the standard library and a
fixed seed are used, and the JSON is written with a fixed key order, so re-running rewrites
the same file byte for byte (``--check`` verifies that).

What it models
    24 conversations (12 English, 12 Chinese) between two friends, A (the memory's owner,
    "I" in first-person questions) and B. Each has 18 dated sessions, 3 to 9 days apart, of
    about 20 turns. Life events (a hike, a new pet, a class, a trip, a wedding...) are told in
    a session with a relative date ("yesterday", "last Saturday", "上周六"), followed by
    reactions, a detail, and often a follow-up sessions later that refers back with pronouns
    ("that trail", "那首曲子"). Both friends talk about the same kinds of things (both hike,
    both have a sister), B mentions A's topics in passing, and there is small talk full of
    weekdays, dates and generic words, so shared words alone do not find the evidence.

Questions (each labelled with the evidence turn ids, and the date it is asked on):
    single-hop      one turn answers it, asked with some of its words;
    multi-hop       two turns, usually in different sessions (a fact plus a later follow-up
                    that only makes sense with it);
    temporal        "when did ..." about an event, or "what did X do last Saturday /
                    yesterday / on May 7" asked on a given date;
    open-domain     needs a small inference from the evidence ("would X enjoy a national
                    park trip?");
    paraphrase      the single-hop fact asked in words far from the evidence.
Conversations with an even index form the dev split, odd ones the test split, so no
conversation is shared between splits.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
from pathlib import Path
from typing import Any

SEED = 20261201
OUT_PATH = Path(__file__).resolve().parent / "conversations.json"
CONVERSATIONS_PER_LANG = 12
SESSIONS = 18

EN_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
EN_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
ZH_WEEKDAYS = ["一", "二", "三", "四", "五", "六", "日"]
ZH_NUMBERS = ["零", "一", "两", "三", "四", "五", "六", "七", "八", "九", "十"]
EN_NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven"]

# --------------------------------------------------------------------------- topics
# Each topic: slot values, and templates. {S} is the subject's name in questions; {O} the
# other friend. Turn templates: st (the event, with {when}), re (the other's reaction,
# optional), det (a detail by the subject), fu (a follow-up sessions later), dis (lines by
# the other speaker that share the topic's words but are not evidence).
# Questions: single / para / temporal / open / multi, each (template, evidence parts).

EN_TOPICS: list[dict[str, Any]] = [
    {
        "key": "hike",
        "slots": {
            "place": ["Bear Mountain", "Eagle Peak", "the Cedar Ridge trail", "Mount Tam"],
            "comp": ["cousin", "brother", "dad", "aunt", "roommate"],
        },
        "st": "I went hiking at {place} {when} with my {comp}.",
        "re": "Oh nice, how was the view up there?",
        "det": "We got to the top just before sunset, my legs are still sore.",
        "fu": "My {comp} keeps sending me photos from that trail, we want to go back in October.",
        "dis": [
            "I keep saying I'll go hiking more, but my knees hate it.",
            "A coworker said {place} is a hard hike, is that true?",
        ],
        "single": ("Who went hiking with {S} at {place}?", ["st"]),
        "para": ("Who accompanied {S} on the mountain outing?", ["st"]),
        "temporal": ("When did {S} go hiking at {place}?", ["st"]),
        "open": ("Would {S} probably enjoy a weekend trip to a national park?", ["st"]),
        "multi": (
            "Which place does {S} want to go back to in October, and with whom?",
            ["st", "fu"],
        ),
        "did": "went hiking",
    },
    {
        "key": "pet",
        "slots": {
            "animal": ["puppy", "kitten", "rabbit", "parrot"],
            "name": ["Biscuit", "Luna", "Pepper", "Mochi", "Oliver", "Coco"],
        },
        "st": "We adopted a {animal} from the shelter {when}!",
        "re": "Aww, what did you name it?",
        "det": "{name}, the kids picked it. It follows me everywhere.",
        "fu": "{name} chewed through my phone charger last night, I can't stay mad at that face.",
        "dis": [
            "My neighbor's dog barks all night, it drives me crazy.",
            "We can't have pets in our building, so I just watch animal videos.",
        ],
        "single": ("What is the name of {S}'s {animal}?", ["det"]),
        "para": ("What do the children call the new furry member of {S}'s family?", ["det"]),
        "temporal": ("When did {S} adopt the {animal}?", ["st"]),
        "open": ("Does {S} have an animal to look after at home?", ["st"]),
        "multi": ("What did {S}'s {animal} destroy?", ["det", "fu"]),
        "did": "adopted a pet",
    },
    {
        "key": "class",
        "slots": {
            "cls": ["pottery", "salsa dancing", "watercolor painting", "photography"],
            "venue": ["the community center", "the library annex", "a studio downtown"],
        },
        "st": "I signed up for a {cls} class at {venue} and had my first lesson {when}.",
        "re": "That's so cool, how was it?",
        "det": "The teacher is so patient, and nobody laughed at my first try.",
        "fu": "My teacher said my last piece was the best in the group, I was so proud.",
        "dis": [
            "Classes like that are way too expensive around here.",
            "My sister took a {cls} class once and quit after a week.",
        ],
        "single": ("What class did {S} sign up for at {venue}?", ["st"]),
        "para": ("What creative hobby did {S} begin taking lessons in?", ["st"]),
        "temporal": ("When did {S} have the first {cls} lesson?", ["st"]),
        "open": ("What would be a thoughtful gift for {S}, given the new hobby?", ["st"]),
        "multi": ("Who praised {S}'s work, and in which class?", ["st", "fu"]),
        "did": "had a first lesson",
    },
    {
        "key": "job",
        "slots": {
            "company": ["Northwind", "Bluefin Labs", "Harbor Health", "Greenleaf Foods"],
            "role": ["data analyst", "nurse", "project manager", "graphic designer"],
        },
        "st": "I started my new job at {company} {when}, I'm a {role} there now.",
        "re": "Congrats!! How's the first week going?",
        "det": "The commute is brutal though, an hour each way.",
        "fu": "My boss asked me to lead the holiday party planning, on my third week!",
        "dis": [
            "Work has been so boring lately, same reports every day.",
            "My cousin applied to {company} but never heard back.",
        ],
        "single": ("Where did {S} start working?", ["st"]),
        "para": ("Who is {S}'s current employer?", ["st"]),
        "temporal": ("When did {S} start the job at {company}?", ["st"]),
        "open": ("How much time does {S} probably spend commuting each day?", ["det"]),
        "multi": ("What was {S} asked to organize at {company}?", ["st", "fu"]),
        "did": "started a new job",
    },
    {
        "key": "trip",
        "slots": {
            "city": ["Lisbon", "Kyoto", "Chicago", "Vancouver", "Barcelona"],
            "dish": ["grilled sardines", "ramen", "deep-dish pizza", "smoked salmon", "tapas"],
        },
        "st": "We just got back from {city}, we flew home {when}.",
        "re": "Welcome back! What was the highlight?",
        "det": "Honestly the {dish}, I had it three days in a row.",
        "fu": "I'm still dreaming about that food, nothing here compares.",
        "dis": [
            "I've never been abroad, maybe one day.",
            "{city} is on my bucket list too!",
        ],
        "single": ("Which city did {S} visit?", ["st"]),
        "para": ("Where did {S} go on vacation?", ["st"]),
        "temporal": ("When did {S} fly home from {city}?", ["st"]),
        "open": ("What kind of restaurant might {S} enjoy after the trip?", ["det"]),
        "multi": ("Which dish from {city} does {S} keep dreaming about?", ["st", "det"]),
        "did": "flew home from a trip",
    },
    {
        "key": "book",
        "slots": {
            "book": ["The Midnight Library", "Educated", "Project Hail Mary", "Klara and the Sun"],
            "who": ["my book club", "my mom", "a coworker"],
        },
        "st": "I finished reading {book} {when}, {who} recommended it.",
        "re": "Ooh, did you like it?",
        "det": "The ending made me cry on the train, so embarrassing.",
        "fu": "I lent it to my neighbor Pam, I hope she gives it back.",
        "dis": [
            "I haven't read anything in months, I just watch shows.",
            "Our book club keeps picking books nobody finishes.",
        ],
        "single": ("What book did {S} finish reading?", ["st"]),
        "para": ("Which novel did {S} get through on someone's suggestion?", ["st"]),
        "temporal": ("When did {S} finish {book}?", ["st"]),
        "open": ("Does {S} enjoy fiction?", ["st"]),
        "multi": ("Who did {S} lend the book that {who} recommended to?", ["st", "fu"]),
        "did": "finished a book",
    },
    {
        "key": "race",
        "slots": {
            "race": ["the city half marathon", "a 10K charity run", "the Turkey Trot 5K"],
            "time": ["two hours and five minutes", "52 minutes", "31 minutes"],
        },
        "st": "I ran {race} {when}! Finished in {time}.",
        "re": "Whoa, that's impressive!",
        "det": "My knees were screaming at the end but I didn't stop once.",
        "fu": "Since then I've been running three mornings a week.",
        "dis": [
            "I could never run that far, I get winded on the stairs.",
            "My brother does {race} every year.",
        ],
        "single": ("What was {S}'s finishing time in {race}?", ["st"]),
        "para": ("How long did it take {S} to complete the running event?", ["st"]),
        "temporal": ("When did {S} run {race}?", ["st"]),
        "open": ("Is {S} in good physical shape?", ["st"]),
        "multi": ("How often does {S} train now, after {race}?", ["st", "fu"]),
        "did": "ran a race",
    },
    {
        "key": "wedding",
        "slots": {
            "rel": ["sister", "brother", "cousin", "best friend"],
            "relname": ["Emma", "Jake", "Sofia", "Daniel", "Grace"],
            "place": ["on the beach", "in a vineyard", "in an old barn", "in a botanical garden"],
        },
        "st": "My {rel} {relname} got married {when}, the ceremony was {place}.",
        "re": "That sounds beautiful, were you in the wedding party?",
        "det": "I gave a speech and totally forgot half of it.",
        "fu": "{relname} sent me the photos, I look ridiculous crying in all of them.",
        "dis": [
            "Weddings are so expensive these days.",
            "My {rel} is engaged too, the wedding is next spring.",
        ],
        "single": ("Where was the wedding of {S}'s {rel}?", ["st"]),
        "para": ("Where did {relname} tie the knot?", ["st"]),
        "temporal": ("When did {S}'s {rel} get married?", ["st"]),
        "open": ("Did {S} have a role in the ceremony?", ["det"]),
        "multi": ("Who sent {S} photos, and how are they related to {S}?", ["st", "fu"]),
        "did": "went to a wedding",
    },
    {
        "key": "allergy",
        "slots": {
            "food": ["shellfish", "peanuts", "dairy", "gluten"],
            "dish": ["shrimp pasta", "pad thai", "cheesecake", "pizza"],
        },
        "st": "I found out I'm allergic to {food}, the doctor confirmed it {when}.",
        "re": "Oh no, that must be a big change.",
        "det": "So no more {dish} for me, which is tragic.",
        "fu": "I had to send my order back at the restaurant, it came with it anyway.",
        "dis": [
            "I eat everything, no allergies at all, lucky me.",
            "My son got a rash from {food} once, it was scary.",
        ],
        "single": ("What is {S} allergic to?", ["st"]),
        "para": ("Which ingredient makes {S} sick?", ["st"]),
        "temporal": ("When did the doctor confirm {S}'s allergy?", ["st"]),
        "open": ("What should a host avoid cooking for {S}?", ["st"]),
        "multi": ("Why did {S} send an order back at a restaurant?", ["st", "fu"]),
        "did": "saw the doctor",
    },
    {
        "key": "move",
        "slots": {
            "area": ["Riverside", "the Old Town", "Maple Heights", "Southgate"],
            "feature": ["a balcony", "a tiny garden", "a view of the river", "a fireplace"],
        },
        "st": "We moved into the new apartment in {area} {when}.",
        "re": "Finally! Is it nice?",
        "det": "It has {feature}, which was the whole reason we picked it.",
        "fu": "The landlord finally fixed the heating in the new place.",
        "dis": [
            "Moving is the worst, I'm never doing it again.",
            "Rent in {area} is insane right now.",
        ],
        "single": ("Which neighborhood did {S} move to?", ["st"]),
        "para": ("Where is {S}'s new home?", ["st"]),
        "temporal": ("When did {S} move into the apartment in {area}?", ["st"]),
        "open": ("Why did {S} choose the new place?", ["det"]),
        "multi": ("What got repaired at {S}'s apartment in {area}?", ["st", "fu"]),
        "did": "moved house",
    },
    {
        "key": "concert",
        "slots": {
            "band": ["Coldplay", "Taylor Swift", "a jazz trio", "the city orchestra"],
            "venue": ["the stadium", "the Blue Note club", "the concert hall"],
        },
        "st": "I saw {band} live at {venue} {when}.",
        "re": "No way, I'm so jealous!",
        "det": "I lost my voice from singing along, totally worth it.",
        "fu": "I bought a poster at that show and finally framed it.",
        "dis": [
            "Concert tickets are so pricey now.",
            "I'd love to see {band} someday.",
        ],
        "single": ("Who did {S} see perform live?", ["st"]),
        "para": ("Which performers did {S} watch on stage?", ["st"]),
        "temporal": ("When did {S} see {band}?", ["st"]),
        "open": ("Does {S} like live music?", ["st"]),
        "multi": ("What souvenir did {S} frame, and from whose show?", ["st", "fu"]),
        "did": "went to a concert",
    },
    {
        "key": "music",
        "slots": {
            "instrument": ["guitar", "piano", "violin", "ukulele"],
            "song": ["Wonderwall", "Clair de Lune", "a Bach minuet", "Riptide"],
        },
        "st": "I started taking {instrument} lessons {when}, my fingers hurt already.",
        "re": "Ha, what are you learning first?",
        "det": "I'm trying to learn {song}.",
        "fu": "I played that song for my family over dinner and nobody laughed!",
        "dis": [
            "I had lessons as a kid and hated every minute.",
            "My neighbor practices {instrument} at midnight.",
        ],
        "single": ("What instrument is {S} learning?", ["st"]),
        "para": ("What kind of music lessons did {S} begin?", ["st"]),
        "temporal": ("When did {S} start {instrument} lessons?", ["st"]),
        "open": ("Is {S} trying to become more musical?", ["st"]),
        "multi": ("Which song did {S} perform for the family?", ["det", "fu"]),
        "did": "had a music lesson",
    },
]

ZH_TOPICS: list[dict[str, Any]] = [
    {
        "key": "hike",
        "slots": {
            "place": ["香山", "泰山", "莫干山", "黄山"],
            "comp": ["表哥", "弟弟", "爸爸", "姑姑", "室友"],
        },
        "st": "我{when}和{comp}去{place}爬山了。",
        "re": "真好，山顶风景怎么样？",
        "det": "我们赶在日落前爬到了顶，现在腿还酸着呢。",
        "fu": "{comp}一直给我发那条路上的照片，我们想十月再去一次。",
        "dis": ["我老说要多去爬山，可是膝盖不争气。", "同事说{place}挺难爬的，是真的吗？"],
        "single": ("{S}和谁一起去{place}爬山了？", ["st"]),
        "para": ("{S}那次登高是谁陪着的？", ["st"]),
        "temporal": ("{S}什么时候去{place}爬山的？", ["st"]),
        "open": ("{S}会喜欢周末去国家公园玩吗？", ["st"]),
        "multi": ("{S}十月想和谁再去哪里？", ["st", "fu"]),
        "did": "去爬山",
    },
    {
        "key": "pet",
        "slots": {
            "animal": ["小狗", "小猫", "兔子", "鹦鹉"],
            "name": ["豆豆", "球球", "可乐", "年糕", "旺财", "咪咪"],
        },
        "st": "我们{when}从救助站领养了一只{animal}！",
        "re": "好可爱，起名字了吗？",
        "det": "叫{name}，孩子们起的，天天跟在我屁股后面。",
        "fu": "{name}昨晚把我的充电线咬断了，可是看它那张脸又生不起气来。",
        "dis": ["邻居家的狗整晚叫，吵死了。", "我们小区不让养宠物，我只能看看视频。"],
        "single": ("{S}家的{animal}叫什么名字？", ["det"]),
        "para": ("{S}家新来的毛孩子，孩子们管它叫啥？", ["det"]),
        "temporal": ("{S}什么时候领养的{animal}？", ["st"]),
        "open": ("{S}家里有需要照顾的动物吗？", ["st"]),
        "multi": ("{S}家的{animal}咬坏了什么？", ["det", "fu"]),
        "did": "领养宠物",
    },
    {
        "key": "class",
        "slots": {
            "cls": ["陶艺", "拉丁舞", "水彩画", "摄影"],
            "venue": ["社区中心", "图书馆分馆", "市中心的一个工作室"],
        },
        "st": "我在{venue}报了个{cls}班，{when}上了第一节课。",
        "re": "好酷啊，感觉怎么样？",
        "det": "老师特别有耐心，我第一次做得很烂也没人笑我。",
        "fu": "老师说我上次的作品是全班最好的，我可骄傲了。",
        "dis": ["这边的兴趣班都太贵了。", "我姐以前也报过{cls}班，一个礼拜就放弃了。"],
        "single": ("{S}在{venue}报了什么班？", ["st"]),
        "para": ("{S}最近开始学哪门手艺？", ["st"]),
        "temporal": ("{S}什么时候上的第一节{cls}课？", ["st"]),
        "open": ("考虑到{S}的新爱好，送什么礼物比较贴心？", ["st"]),
        "multi": ("谁夸了{S}的作品？是在什么班上？", ["st", "fu"]),
        "did": "上第一节课",
    },
    {
        "key": "job",
        "slots": {
            "company": ["字节跳动", "华为", "美团", "一家医院"],
            "role": ["数据分析师", "护士", "项目经理", "平面设计师"],
        },
        "st": "我{when}去{company}入职了，现在是{role}。",
        "re": "恭喜恭喜！第一周还适应吗？",
        "det": "就是通勤太折腾了，单程一个小时。",
        "fu": "领导让我负责年会的筹备，我才去了三个星期！",
        "dis": ["最近工作好无聊，天天写一样的报表。", "我表妹也投过{company}，一直没回音。"],
        "single": ("{S}在哪里上班了？", ["st"]),
        "para": ("{S}现在的东家是谁？", ["st"]),
        "temporal": ("{S}什么时候去{company}入职的？", ["st"]),
        "open": ("{S}每天大概要花多少时间在路上？", ["det"]),
        "multi": ("{S}在{company}被安排筹备什么活动？", ["st", "fu"]),
        "did": "入职新工作",
    },
    {
        "key": "trip",
        "slots": {
            "city": ["成都", "西安", "厦门", "大理", "青岛"],
            "dish": ["火锅", "肉夹馍", "沙茶面", "烤乳扇", "海鲜"],
        },
        "st": "我们刚从{city}回来，{when}坐飞机回的家。",
        "re": "欢迎回来！最难忘的是什么？",
        "det": "说实话是{dish}，我连着吃了三天。",
        "fu": "我到现在还惦记着那边的吃的，这里的都比不上。",
        "dis": ["我还没怎么出过远门，以后再说吧。", "{city}也在我的旅行清单上！"],
        "single": ("{S}去了哪个城市？", ["st"]),
        "para": ("{S}假期去哪儿玩了？", ["st"]),
        "temporal": ("{S}什么时候从{city}飞回来的？", ["st"]),
        "open": ("旅行回来后，{S}可能会喜欢什么样的餐馆？", ["det"]),
        "multi": ("{S}一直惦记的{city}美食是什么？", ["st", "det"]),
        "did": "旅行回家",
    },
    {
        "key": "book",
        "slots": {
            "book": ["《活着》", "《三体》", "《围城》", "《平凡的世界》"],
            "who": ["读书会的朋友", "我妈", "一个同事"],
        },
        "st": "我{when}把{book}看完了，是{who}推荐的。",
        "re": "哇，好看吗？",
        "det": "结局让我在地铁上哭了，太丢人了。",
        "fu": "我把它借给邻居小王了，希望她记得还。",
        "dis": ["我好几个月没看书了，光刷剧。", "我们读书会选的书总是没人看完。"],
        "single": ("{S}读完了哪本书？", ["st"]),
        "para": ("{S}听了别人建议啃完的是哪部小说？", ["st"]),
        "temporal": ("{S}什么时候读完{book}的？", ["st"]),
        "open": ("{S}喜欢看小说吗？", ["st"]),
        "multi": ("{who}推荐的那本书，{S}借给谁了？", ["st", "fu"]),
        "did": "读完一本书",
    },
    {
        "key": "race",
        "slots": {
            "race": ["城市半程马拉松", "十公里公益跑", "环湖五公里跑"],
            "time": ["两小时零五分", "五十二分钟", "三十一分钟"],
        },
        "st": "我{when}跑了{race}！用了{time}。",
        "re": "哇，太厉害了！",
        "det": "最后膝盖疼得要命，但我一次都没停。",
        "fu": "从那以后我每周跑三个早上。",
        "dis": ["我可跑不了那么远，爬个楼梯都喘。", "我哥每年都参加{race}。"],
        "single": ("{S}跑{race}用了多长时间？", ["st"]),
        "para": ("{S}那次长跑比赛花了多久完赛？", ["st"]),
        "temporal": ("{S}什么时候跑的{race}？", ["st"]),
        "open": ("{S}身体素质好吗？", ["st"]),
        "multi": ("{S}跑完{race}之后，现在多久练一次？", ["st", "fu"]),
        "did": "跑比赛",
    },
    {
        "key": "wedding",
        "slots": {
            "rel": ["姐姐", "哥哥", "表妹", "闺蜜"],
            "relname": ["小雨", "阿杰", "婷婷", "大伟", "晓彤"],
            "place": ["在海边", "在一个葡萄园里", "在一座老院子里", "在植物园里"],
        },
        "st": "我{rel}{relname}{when}结婚了，仪式是{place}办的。",
        "re": "听起来好美，你当伴娘了吗？",
        "det": "我上台致辞，结果忘了一半的词。",
        "fu": "{relname}把照片发给我了，我每张都哭得好丑。",
        "dis": ["现在办婚礼太费钱了。", "我{rel}也订婚了，明年春天办。"],
        "single": ("{S}的{rel}在哪里办的婚礼？", ["st"]),
        "para": ("{relname}是在什么地方成的家？", ["st"]),
        "temporal": ("{S}的{rel}什么时候结的婚？", ["st"]),
        "open": ("{S}在仪式上有没有担任什么角色？", ["det"]),
        "multi": ("谁给{S}发了照片？和{S}是什么关系？", ["st", "fu"]),
        "did": "参加婚礼",
    },
    {
        "key": "allergy",
        "slots": {
            "food": ["海鲜", "花生", "牛奶", "芒果"],
            "dish": ["小龙虾", "宫保鸡丁", "奶茶", "芒果班戟"],
        },
        "st": "我查出来对{food}过敏，医生{when}确诊的。",
        "re": "啊，那生活要改变不少吧。",
        "det": "以后再也不能吃{dish}了，太惨了。",
        "fu": "上次在饭店我只好把菜退了，里面还是放了那个。",
        "dis": ["我什么都能吃，一点不过敏，幸运吧。", "我儿子有次吃{food}起了疹子，吓死了。"],
        "single": ("{S}对什么过敏？", ["st"]),
        "para": ("哪种食材会让{S}身体不舒服？", ["st"]),
        "temporal": ("医生什么时候确诊{S}过敏的？", ["st"]),
        "open": ("请{S}吃饭时应该避开哪些菜？", ["st"]),
        "multi": ("{S}为什么在饭店退了菜？", ["st", "fu"]),
        "did": "看医生",
    },
    {
        "key": "move",
        "slots": {
            "area": ["滨江", "老城区", "高新区", "南湖"],
            "feature": ["一个阳台", "一个小花园", "江景", "一个壁炉"],
        },
        "st": "我们{when}搬进了{area}的新公寓。",
        "re": "终于搬了！房子好吗？",
        "det": "带{feature}，我们就是冲这个选的。",
        "fu": "房东总算把新家的暖气修好了。",
        "dis": ["搬家太累了，我再也不想搬了。", "{area}的房租现在贵得离谱。"],
        "single": ("{S}搬到了哪个区？", ["st"]),
        "para": ("{S}的新住处在哪儿？", ["st"]),
        "temporal": ("{S}什么时候搬进{area}的公寓的？", ["st"]),
        "open": ("{S}为什么选了新房子？", ["det"]),
        "multi": ("{S}在{area}的公寓修好了什么？", ["st", "fu"]),
        "did": "搬家",
    },
    {
        "key": "concert",
        "slots": {
            "band": ["五月天", "周杰伦", "一个爵士三重奏", "市交响乐团"],
            "venue": ["体育场", "蓝调酒吧", "音乐厅"],
        },
        "st": "我{when}在{venue}看了{band}的现场。",
        "re": "天哪，羡慕死我了！",
        "det": "跟着唱到嗓子都哑了，太值了。",
        "fu": "我在那场买的海报终于裱起来了。",
        "dis": ["现在演唱会门票太贵了。", "我也好想去看一次{band}。"],
        "single": ("{S}看了谁的现场演出？", ["st"]),
        "para": ("{S}在台下看的是哪位艺人的表演？", ["st"]),
        "temporal": ("{S}什么时候看的{band}？", ["st"]),
        "open": ("{S}喜欢听现场音乐吗？", ["st"]),
        "multi": ("{S}裱起来的纪念品是什么？是谁的演出上买的？", ["st", "fu"]),
        "did": "看演出",
    },
    {
        "key": "music",
        "slots": {
            "instrument": ["吉他", "钢琴", "小提琴", "尤克里里"],
            "song": ["《小星星》", "《月亮代表我的心》", "《卡农》", "《晴天》"],
        },
        "st": "我{when}开始上{instrument}课了，手指已经疼了。",
        "re": "哈哈，先学什么曲子？",
        "det": "在练{song}。",
        "fu": "吃饭的时候我给家里人弹了那首曲子，居然没人笑！",
        "dis": ["我小时候上过乐器课，恨死了。", "我邻居半夜练{instrument}。"],
        "single": ("{S}在学什么乐器？", ["st"]),
        "para": ("{S}开始上哪种音乐课了？", ["st"]),
        "temporal": ("{S}什么时候开始上{instrument}课的？", ["st"]),
        "open": ("{S}是不是想让自己更有音乐细胞？", ["st"]),
        "multi": ("{S}给家里人演奏了哪首曲子？", ["det", "fu"]),
        "did": "上乐器课",
    },
]

EN_SMALL_TALK = {
    "open": [
        "Hey {O}! How's your week been?",
        "Hi {O}, long time no talk!",
        "Morning! Did you sleep okay?",
        "Hey, are you free to chat for a bit?",
    ],
    "open_re": [
        "Pretty good! Busy, but good.",
        "Hey! Same old, same old.",
        "Not bad at all, thanks for asking.",
        "Tired, but happy to hear from you.",
    ],
    "filler": [
        "Saturday was so rainy here, I didn't leave the couch.",
        "I have a dentist appointment on Thursday, wish me luck.",
        "Do you want to grab coffee next Saturday?",
        "The weather has been crazy this week.",
        "I'm trying to drink more water, it's harder than it sounds.",
        "Traffic on Monday was a nightmare.",
        "We should plan something for next month.",
        "I'm so behind on laundry, don't ask.",
        "Did you watch the game on Sunday?",
        "My mom called yesterday just to talk about her garden.",
        "I keep forgetting to reply to emails on Fridays.",
        "Let's catch up properly next week.",
        "I made pasta again, it's the only thing I can cook.",
        "The new cafe near work is pretty good.",
        "My phone battery dies so fast lately.",
        "It was so hot on Tuesday, I almost melted.",
    ],
    "react": [
        "That sounds amazing!",
        "Oh wow, tell me more.",
        "Haha, I can totally picture that.",
        "I'm so happy for you.",
        "No way! That's great.",
        "That's lovely, really.",
        "Honestly, same.",
        "Oh no, really?",
    ],
    "close": [
        "Anyway, I have to run. Talk soon!",
        "Okay, gotta go cook dinner. Bye!",
        "Let's talk again next week!",
        "Good night, {O}!",
    ],
    "close_re": ["Bye! Take care.", "Talk soon!", "See you!", "Night night!"],
    "mention": [
        "How's everything with the {topic} stuff?",
        "You mentioned {topic} last time, right?",
    ],
}

ZH_SMALL_TALK = {
    "open": ["嗨{O}！这周过得怎么样？", "{O}，好久没聊了！", "早呀！睡得好吗？", "在吗？聊两句？"],
    "open_re": [
        "挺好的！忙，但挺充实。",
        "嘿！老样子。",
        "还不错，谢谢关心。",
        "有点累，不过很高兴收到你消息。",
    ],
    "filler": [
        "周六这边下了一天雨，我就在沙发上躺着。",
        "我周四要去看牙，祝我好运。",
        "下周六要不要一起喝咖啡？",
        "这周天气太反常了。",
        "我在努力多喝水，比想象中难。",
        "周一早上堵车堵疯了。",
        "我们下个月找个时间聚聚吧。",
        "我积了一堆衣服没洗，别问。",
        "你周日看球赛了吗？",
        "我妈昨天打电话来就为了聊她种的花。",
        "我老是周五忘记回邮件。",
        "下周好好聊聊吧。",
        "我又煮了面条，我就会做这个。",
        "公司附近新开的咖啡馆还不错。",
        "我手机最近掉电特别快。",
        "周二热死了，我差点化了。",
    ],
    "react": [
        "听起来太棒了！",
        "哇，快多说点。",
        "哈哈，我完全能想象。",
        "真为你高兴。",
        "不会吧！太好了。",
        "真好啊。",
        "说实话，我也是。",
        "啊，真的吗？",
    ],
    "close": ["好啦，我得走了，回头聊！", "好，我去做饭了，拜拜！", "下周再聊！", "晚安，{O}！"],
    "close_re": ["拜拜！保重。", "回头聊！", "再见！", "晚安！"],
    "mention": ["{topic}的事情怎么样了？", "你上次是不是说到{topic}来着？"],
}

EN_NAMES = [
    ("Caroline", "Melanie"),
    ("Jon", "Gina"),
    ("Maria", "John"),
    ("Nate", "Joanna"),
    ("Tim", "Audrey"),
    ("Sarah", "Dave"),
    ("Evan", "Priya"),
    ("Olivia", "Marcus"),
    ("Hannah", "Leo"),
    ("Chris", "Nina"),
    ("Rachel", "Omar"),
    ("Ben", "Lucy"),
]
ZH_NAMES = [
    ("李娜", "王芳"),
    ("陈静", "刘洋"),
    ("张伟", "赵敏"),
    ("孙丽", "周杰"),
    ("吴昊", "郑爽"),
    ("黄磊", "林琳"),
    ("何欣", "高远"),
    ("马超", "许晴"),
    ("罗佳", "谢峰"),
    ("宋雨", "唐宁"),
    ("韩梅", "冯涛"),
    ("曹颖", "彭博"),
]
EN_TOPIC_WORDS = {
    "hike": "hiking",
    "pet": "pet",
    "class": "class",
    "job": "job",
    "trip": "trip",
    "book": "book",
    "race": "running",
    "wedding": "wedding",
    "allergy": "doctor",
    "move": "apartment",
    "concert": "concert",
    "music": "music lessons",
}
ZH_TOPIC_WORDS = {
    "hike": "爬山",
    "pet": "宠物",
    "class": "兴趣班",
    "job": "工作",
    "trip": "旅行",
    "book": "看书",
    "race": "跑步",
    "wedding": "婚礼",
    "allergy": "看医生",
    "move": "搬家",
    "concert": "演唱会",
    "music": "学乐器",
}


# --------------------------------------------------------------------------- dates


def en_when(event: dt.date, said: dt.date, rng: random.Random) -> str:
    """How a speaker on ``said`` refers to ``event`` (1-6 days before)."""
    days = (said - event).days
    if days == 1:
        return "yesterday"
    options = [f"{EN_NUMBERS[days]} days ago", f"last {EN_WEEKDAYS[event.weekday()]}"]
    if event.weekday() >= 5 and days <= 6:
        options.append("last weekend")
    return rng.choice(options)


def zh_when(event: dt.date, said: dt.date, rng: random.Random) -> str:
    days = (said - event).days
    if days == 1:
        return "昨天"
    if days == 2:
        return rng.choice(["前天", "两天前"])
    same_week = event.isocalendar()[:2] == said.isocalendar()[:2]
    weekday = ZH_WEEKDAYS[event.weekday()]
    named = f"这周{weekday}" if same_week else f"上周{weekday}"
    return rng.choice([f"{ZH_NUMBERS[days]}天前", named])


def en_asked(event: dt.date, asked: dt.date, rng: random.Random) -> str:
    """A date expression for ``event`` as seen from ``asked``."""
    days = (asked - event).days
    if days == 1:
        return rng.choice(["yesterday", f"on {EN_MONTHS[event.month - 1]} {event.day}"])
    return rng.choice(
        [
            f"{EN_NUMBERS[days]} days ago",
            f"last {EN_WEEKDAYS[event.weekday()]}",
            f"on {EN_MONTHS[event.month - 1]} {event.day}",
        ]
    )


def zh_asked(event: dt.date, asked: dt.date, rng: random.Random) -> str:
    days = (asked - event).days
    if days == 1:
        return rng.choice(["昨天", f"{event.month}月{event.day}日"])
    same_week = event.isocalendar()[:2] == asked.isocalendar()[:2]
    weekday = ZH_WEEKDAYS[event.weekday()]
    named = f"这周{weekday}" if same_week else f"上周{weekday}"
    if days == 2:
        return rng.choice(["前天", named, f"{event.month}月{event.day}日"])
    return rng.choice([f"{ZH_NUMBERS[days]}天前", named, f"{event.month}月{event.day}号"])


# --------------------------------------------------------------------------- questions


def first_person_en(template: str) -> str | None:
    """The question as the memory's owner asks it ("Where did I ..."), or None."""
    replacements = [
        ("Does {S} ", "Do I "),
        ("Is {S} ", "Am I "),
        ("Would {S} ", "Would I "),
        ("did {S} ", "did I "),
        ("does {S} ", "do I "),
        ("is {S} ", "am I "),
        ("{S}'s ", "my "),
        ("with {S}", "with me"),
        ("for {S}", "for me"),
        ("sent {S}", "sent me"),
        ("to {S}", "to me"),
        ("praised {S}", "praised me"),
        ("accompanied {S}", "accompanied me"),
        ("makes {S}", "makes me"),
        ("was {S} ", "was I "),
        ("might {S} ", "might I "),
        ("much time does {S}", "much time do I"),
    ]
    out = template
    for old, new in replacements:
        out = out.replace(old, new)
    return None if "{S}" in out else out


def fill(template: str, slots: dict[str, str]) -> str:
    out = template
    for key, value in slots.items():
        out = out.replace("{" + key + "}", value)
    return out


# --------------------------------------------------------------------------- generation


class Conversation:
    def __init__(self, index: int, lang: str, rng: random.Random) -> None:
        self.index = index
        self.lang = lang
        self.rng = rng
        self.id = f"{lang}{index:02d}"
        names = (EN_NAMES if lang == "en" else ZH_NAMES)[index]
        self.a, self.b = names
        self.topics = EN_TOPICS if lang == "en" else ZH_TOPICS
        self.talk = EN_SMALL_TALK if lang == "en" else ZH_SMALL_TALK
        self.turns: list[dict[str, Any]] = []
        self.questions: list[dict[str, Any]] = []

    def other(self, speaker: str) -> str:
        return self.b if speaker == self.a else self.a

    def build(self) -> None:
        rng = self.rng
        start = dt.date(2023, 1, 2) + dt.timedelta(days=rng.randrange(0, 200))
        dates = [start]
        for _ in range(SESSIONS - 1):
            dates.append(dates[-1] + dt.timedelta(days=rng.randint(3, 9)))
        # Life events: each friend gets 8 topics, so about 5 are shared (distractors).
        events: list[dict[str, Any]] = []
        for speaker in (self.a, self.b):
            for topic in rng.sample(self.topics, 8):
                slots = {k: rng.choice(v) for k, v in topic["slots"].items()}
                session = rng.randrange(0, SESSIONS - 3)
                followup = rng.randrange(session + 1, SESSIONS)
                said = dates[session]
                event = said - dt.timedelta(days=rng.randint(1, 6))
                events.append(
                    {
                        "topic": topic,
                        "speaker": speaker,
                        "slots": slots,
                        "session": session,
                        "followup": followup,
                        "event_date": event,
                        "turns": {},
                    }
                )
        for number, date in enumerate(dates):
            self._session(
                number,
                date,
                [e for e in events if e["session"] == number],
                [e for e in events if e["followup"] == number],
            )
        for event in events:
            self._questions(event, events)
        self._week_questions(events)

    def _add(self, session: int, date: dt.date, speaker: str, text: str) -> str:
        turn = sum(1 for t in self.turns if t["session"] == session)
        turn_id = f"{self.id}:s{session:02d}:t{turn:02d}"
        self.turns.append(
            {
                "id": turn_id,
                "session": session,
                "turn": turn,
                "date": date.isoformat(),
                "speaker": speaker,
                "text": text,
            }
        )
        return turn_id

    def _small(self, kind: str, speaker: str) -> str:
        return self.rng.choice(self.talk[kind]).replace("{O}", self.other(speaker))

    def _session(
        self, number: int, date: dt.date, told: list[dict[str, Any]], followed: list[dict[str, Any]]
    ) -> None:
        rng = self.rng
        first = rng.choice([self.a, self.b])
        self._add(number, date, first, self._small("open", first))
        self._add(number, date, self.other(first), self._small("open_re", self.other(first)))
        blocks: list[list[tuple[str, str, str | None, dict[str, Any] | None]]] = []
        for event in told:
            topic, speaker, slots = event["topic"], event["speaker"], event["slots"]
            when = (en_when if self.lang == "en" else zh_when)(event["event_date"], date, rng)
            other = self.other(speaker)
            block = [(speaker, fill(topic["st"], {**slots, "when": when}), "st", event)]
            block.append(
                (
                    other,
                    topic["re"] if rng.random() < 0.7 else self._small("react", other),
                    None,
                    None,
                )
            )
            block.append((speaker, fill(topic["det"], slots), "det", event))
            if rng.random() < 0.6:
                block.append((other, self._small("react", other), None, None))
            if rng.random() < 0.7:
                block.append((other, fill(rng.choice(topic["dis"]), slots), None, None))
            blocks.append(block)
        for event in followed:
            topic, speaker, slots = event["topic"], event["speaker"], event["slots"]
            other = self.other(speaker)
            words = (EN_TOPIC_WORDS if self.lang == "en" else ZH_TOPIC_WORDS)[topic["key"]]
            block = []
            if rng.random() < 0.5:
                block.append(
                    (other, self._small("mention", other).replace("{topic}", words), None, None)
                )
            block.append((speaker, fill(topic["fu"], slots), "fu", event))
            block.append((other, self._small("react", other), None, None))
            blocks.append(block)
        # Small talk, and the other friend's passing remarks on topics not theirs.
        for _ in range(rng.randint(4, 7)):
            speaker = rng.choice([self.a, self.b])
            line = self._small("filler", speaker)
            blocks.append(
                [
                    (speaker, line, None, None),
                    (self.other(speaker), self._small("react", self.other(speaker)), None, None),
                ]
            )
        for _ in range(rng.randint(1, 2)):
            topic = rng.choice(self.topics)
            slots = {k: rng.choice(v) for k, v in topic["slots"].items()}
            speaker = rng.choice([self.a, self.b])
            blocks.append([(speaker, fill(rng.choice(topic["dis"]), slots), None, None)])
        rng.shuffle(blocks)
        for block in blocks:
            for speaker, text, part, event in block:
                turn_id = self._add(number, date, speaker, text)
                if event is not None and part is not None:
                    event["turns"][part] = turn_id
        closer = rng.choice([self.a, self.b])
        self._add(number, date, closer, self._small("close", closer))
        self._add(number, date, self.other(closer), self._small("close_re", self.other(closer)))

    def _question(
        self, category: str, text: str, evidence: list[str], asked: dt.date, topic: str
    ) -> None:
        self.questions.append(
            {
                "id": f"{self.id}:q{len(self.questions):03d}",
                "conversation": self.id,
                "lang": self.lang,
                "category": category,
                "topic": topic,
                "text": text,
                "evidence": sorted(set(evidence)),
                "asked_on": asked.isoformat(),
            }
        )

    def _subject(self, template: str, speaker: str) -> str:
        """Fill {S}: A sometimes asks about themself in the first person."""
        if speaker == self.a and self.rng.random() < 0.35:
            if self.lang == "zh":
                return template.replace("{S}", "我")
            mine = first_person_en(template)
            if mine is not None:
                return mine
        return template.replace("{S}", speaker)

    def _questions(self, event: dict[str, Any], events: list[dict[str, Any]]) -> None:
        rng = self.rng
        topic, slots, speaker = event["topic"], event["slots"], event["speaker"]
        last = self.turns[-1]["date"]
        final = dt.date.fromisoformat(last) + dt.timedelta(days=rng.randint(1, 10))
        kinds = ["single", "para", "temporal", "open", "multi", "relative"]
        for kind in rng.sample(kinds, 4):
            if kind == "relative":
                asked = event["event_date"] + dt.timedelta(days=rng.randint(1, 6))
                phrase = (en_asked if self.lang == "en" else zh_asked)(
                    event["event_date"], asked, rng
                )
                if self.lang == "en":
                    template = rng.choice(
                        ["What did {S} do {when}?", "What happened with {S} {when}?"]
                    )
                    if speaker == self.a and rng.random() < 0.35:
                        template = rng.choice(["What did I do {when}?", "What was I up to {when}?"])
                else:
                    template = rng.choice(["{S}{when}做了什么？", "{S}{when}干嘛了？"])
                text = self._subject(template.replace("{when}", phrase), speaker)
                same_day = [
                    e["turns"]["st"]
                    for e in events
                    if e["speaker"] == speaker and e["event_date"] == event["event_date"]
                ]
                self._question("temporal", text, same_day, asked, topic["key"])
                continue
            template, parts = topic[kind]
            category = {
                "single": "single-hop",
                "para": "paraphrase",
                "temporal": "temporal",
                "open": "open-domain",
                "multi": "multi-hop",
            }[kind]
            text = self._subject(fill(template, slots), speaker)
            evidence = [event["turns"][part] for part in parts]
            self._question(category, text, evidence, final, topic["key"])

    def _week_questions(self, events: list[dict[str, Any]]) -> None:
        """'What did I do last week?': every event of A's in the calendar week before."""
        mine = [e for e in events if e["speaker"] == self.a]
        for event in self.rng.sample(mine, 3):
            monday = event["event_date"] - dt.timedelta(days=event["event_date"].weekday())
            asked = monday + dt.timedelta(days=7 + self.rng.randint(0, 4))
            week = [e for e in mine if monday <= e["event_date"] < monday + dt.timedelta(days=7)]
            text = (
                self.rng.choice(["What did I do last week?", "What was I up to last week?"])
                if self.lang == "en"
                else self.rng.choice(["我上周都干了些什么？", "我上周做了什么？"])
            )
            self._question("temporal", text, [e["turns"]["st"] for e in week], asked, "week")


def generate() -> dict[str, Any]:
    rng = random.Random(SEED)
    conversations = []
    for lang in ("en", "zh"):
        for index in range(CONVERSATIONS_PER_LANG):
            conversation = Conversation(index, lang, random.Random(rng.getrandbits(64)))
            conversation.build()
            conversations.append(
                {
                    "id": conversation.id,
                    "lang": lang,
                    "split": "dev" if index % 2 == 0 else "test",
                    "speakers": [conversation.a, conversation.b],
                    "owner": conversation.a,
                    "turns": conversation.turns,
                    "questions": conversation.questions,
                }
            )
    return {"seed": SEED, "conversations": conversations}


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=None, separators=(",", ":")) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = parser.parse_args(argv)
    text = render(generate())
    if args.check:
        current = OUT_PATH.read_text(encoding="utf-8") if OUT_PATH.exists() else ""
        if current != text:
            print(f"{OUT_PATH} is stale: run python {Path(__file__).name}", file=sys.stderr)
            return 1
        print(f"{OUT_PATH.name} is up to date")
        return 0
    OUT_PATH.write_text(text, encoding="utf-8")
    data = json.loads(text)
    turns = sum(len(c["turns"]) for c in data["conversations"])
    questions = [q for c in data["conversations"] for q in c["questions"]]
    print(
        f"wrote {OUT_PATH.name}: {len(data['conversations'])} conversations, {turns} turns, "
        f"{len(questions)} questions ({len(text) // 1024} KiB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
