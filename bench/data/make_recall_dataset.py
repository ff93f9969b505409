"""Generate the bilingual (English/Chinese) personal-memory recall benchmark dataset.

Run:  python bench/data/make_recall_dataset.py
Writes bench/data/recall_dataset.json next to this script. Output is deterministic: all
content is hand-written below, the only randomness (clock time of each stored fact) comes
from a fixed seed, and JSON is written with a fixed key order and UTF-8, so re-running
rewrites the same file byte-for-byte.

Data model (per user, written by hand):
  facts:   (key, day, category, content[, supersedes_key])
           - key is a local handle used by queries; fact ids (u01-f01, ...) are assigned after
             sorting events by day (stable, so same-day facts keep their written order).
           - a 5th element names the older fact this one replaces ("Lives in Seattle" ->
             "Moved to Denver"); queries about it expect the new fact and list the old as stale.
           - lang is detected from the text (any CJK character -> "zh").
  queries: (expected_key, text[, (also_relevant_keys...)])
           - lang detected from the text; kind = "<query lang>-<fact lang>".
Only the Python standard library is used.
"""

from __future__ import annotations

import datetime as _dt
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

from assistant.memory.consolidate import CATEGORIES as FACT_CATEGORIES

SEED = 20240611
BASE_DATE = _dt.datetime(2024, 1, 8, tzinfo=_dt.UTC)
OUT_PATH = Path(__file__).resolve().parent / "recall_dataset.json"
CATEGORIES = tuple(category for category in FACT_CATEGORIES if category != "other")

# ---------------------------------------------------------------------------------------
# Hand-written users. Odd ids write mainly in English, even ids mainly in Chinese; about a
# fifth of each user's facts are in the other language.
# ---------------------------------------------------------------------------------------
USERS = [
    # ---------------------------------------------------------------- u01 (en)
    dict(
        uid="u01",
        main="en",
        facts=[
            ("name", 0, "identity", "Name is Daniel Carter"),
            ("age", 0, "identity", "Is 34 years old"),
            ("job", 1, "identity", "Works as a data analyst at a logistics company"),
            ("loc", 1, "location", "Lives in Seattle"),
            ("sister", 3, "relationship", "Sister Emily lives in Portland"),
            ("coffee", 5, "preference", "Drinks an oat-milk flat white every morning"),
            ("allergy", 7, "constraint", "Allergic to shellfish"),
            ("tea", 10, "preference", "不喜欢喝绿茶，觉得太苦"),
            ("priya", 12, "relationship", "Colleague Priya is vegan"),
            ("dog", 15, "relationship", "Has a golden retriever named Biscuit"),
            ("partner", 16, "relationship", "Partner Sam works as a nurse"),
            ("jazz", 20, "preference", "爱听爵士乐，尤其是 Chet Baker"),
            ("race", 25, "project", "Training for a half marathon in October"),
            ("style", 30, "preference", "Prefers short, bullet-point answers"),
            ("budget", 40, "constraint", "每个月在外面吃饭的预算不超过300美元"),
            (
                "job2",
                62,
                "identity",
                "Switched jobs: now a product manager at a fintech startup",
                "job",
            ),
            ("loc2", 91, "location", "Moved to Denver", "loc"),
            ("nocar", 104, "decision", "决定今年先不买车，继续骑自行车通勤"),
        ],
        queries=[
            ("name", "How should you sign off emails you draft on my behalf?"),
            ("age", "What year was I born, roughly?"),
            ("loc2", "Which city should you use for my local weather forecast?"),
            ("loc2", "Find me a good brunch spot near where I live."),
            ("job2", "What do I do for a living these days?"),
            ("allergy", "Can I order the shrimp pad thai?"),
            ("coffee", "How do I usually take my morning caffeine?"),
            ("sister", "Where is Emily based?"),
            ("dog", "What breed is Biscuit?"),
            ("partner", "What does Sam do for work?"),
            ("race", "Help me plan my long runs for the race I'm preparing for."),
            ("style", "How long should your replies to me be?"),
            ("priya", "Will Priya eat the cheese platter I'm bringing to the office?"),
            ("tea", "Should I order a pot of green tea with my dim sum?"),
            ("jazz", "Put on some music I'd enjoy while I cook."),
            ("budget", "How much can I spend on restaurants this month?"),
            ("nocar", "Should I visit car dealerships this weekend?"),
            ("loc2", "我现在住在哪个城市？"),
            ("allergy", "我能吃龙虾吗？"),
            ("dog", "我的狗叫什么名字？"),
            ("jazz", "推荐几张我可能会喜欢的专辑"),
            ("nocar", "我买车的事最后是怎么打算的？"),
        ],
    ),
    # ---------------------------------------------------------------- u02 (zh)
    dict(
        uid="u02",
        main="zh",
        facts=[
            ("name", 0, "identity", "名字叫林晓雯"),
            ("age", 0, "identity", "今年29岁"),
            ("job", 1, "identity", "在一家电商公司做UI设计师"),
            ("loc", 1, "location", "住在杭州滨江区"),
            ("parents", 2, "relationship", "父母住在苏州"),
            ("cat", 5, "relationship", "养了一只叫年糕的橘猫"),
            ("tea", 8, "preference", "爱喝茉莉花茶"),
            ("spicy", 10, "constraint", "不太能吃辣"),
            ("allergy", 12, "constraint", "对芒果过敏"),
            ("bf", 15, "relationship", "男朋友叫周凯，是一名律师"),
            ("xiaochen", 20, "relationship", "同事小陈吃素"),
            ("hike", 22, "preference", "周末喜欢去爬山"),
            ("japanese", 30, "project", "Learning Japanese on Duolingo every evening"),
            ("style", 35, "preference", "Prefers detailed, step-by-step explanations"),
            ("author", 40, "preference", "Favorite author is Haruki Murakami"),
            ("iceland", 60, "project", "Saving up for a trip to Iceland next spring"),
            ("loc2", 95, "location", "搬到了成都，住在高新区", "loc"),
            ("spicy2", 150, "preference", "在成都待了几个月，现在很能吃辣了", "spicy"),
        ],
        queries=[
            ("loc2", "帮我查一下我所在城市明天的天气"),
            ("loc2", "周末想在家附近找家好吃的火锅店，有推荐吗？", ("spicy2",)),
            ("spicy2", "点菜的时候要不要给我选微辣？"),
            ("allergy", "热带水果拼盘里有什么是我得避开的？"),
            ("cat", "我家猫叫什么？"),
            ("cat", "年糕最近掉毛很厉害，该怎么办？"),
            ("bf", "我对象是做什么工作的？"),
            ("parents", "我爸妈住在哪儿？"),
            ("tea", "下午茶点什么饮料比较合我口味？"),
            ("hike", "这周末有什么户外活动适合我？"),
            ("age", "我今年多大了？"),
            ("job", "我在公司主要负责什么？"),
            ("xiaochen", "团建聚餐要照顾一下谁的饮食习惯？"),
            ("author", "我最喜欢哪位作家？"),
            ("japanese", "我每天晚上在学哪门外语？"),
            ("style", "你回答我的问题时应该详细一点还是简短一点？"),
            ("iceland", "我明年春天打算去哪里旅行？"),
            ("loc2", "Which city am I based in now?"),
            ("cat", "What's my cat's name?"),
            ("allergy", "Is there any fruit I should stay away from?"),
            ("author", "Recommend a novel by my favourite writer that I might not have read yet."),
            ("iceland", "How much should I put aside each month for my big trip?"),
        ],
    ),
    # ---------------------------------------------------------------- u03 (en)
    dict(
        uid="u03",
        main="en",
        facts=[
            ("name", 0, "identity", "Name is Olivia Bennett"),
            ("age", 0, "identity", "Is 41 years old"),
            ("job", 0, "identity", "Teaches history at a secondary school"),
            ("loc", 1, "location", "Lives in Bristol"),
            ("nbhd", 1, "location", "Home is in the Clifton area"),
            ("mother", 3, "relationship", "Mother lives in Edinburgh"),
            ("husband", 3, "relationship", "Married to Tom, an architect"),
            ("kids", 4, "relationship", "Has two daughters, Ava (9) and Lily (6)"),
            ("veg", 5, "constraint", "Is vegetarian"),
            ("tom_gluten", 6, "relationship", "Tom can't eat gluten"),
            ("dog", 8, "relationship", "Has a border collie called Pepper"),
            ("book", 10, "preference", "Loves Hilary Mantel's historical novels"),
            ("choir", 12, "preference", "Sings in a community choir on Tuesday evenings"),
            ("swim", 15, "constraint", "每周三傍晚要送女儿去上游泳课，没空开会"),
            ("yunnan", 20, "project", "正在学中文，打算明年暑假去云南旅行"),
            ("travel", 25, "preference", "喜欢自由行，不喜欢跟团"),
            ("knee", 30, "constraint", "膝盖有旧伤，不能跑步"),
            ("job2", 80, "identity", "Promoted to head of the humanities department", "job"),
            ("veg2", 120, "constraint", "Started eating fish again; now pescatarian", "veg"),
        ],
        queries=[
            ("veg2", "Can you suggest a salmon recipe for me, or is that off the table?"),
            ("veg2", "Plan my meals for the week around what I eat these days."),
            ("job2", "What's my role at school now?"),
            ("job2", "Draft a LinkedIn headline for me based on my current position."),
            ("nbhd", "Which neighbourhood is my house in?", ("loc",)),
            ("loc", "What city should I put down as my home address?", ("nbhd",)),
            ("kids", "How old are my girls?"),
            ("husband", "What does my husband do?"),
            ("tom_gluten", "Does Tom need a special menu at the dinner party?"),
            ("dog", "Remind me what breed Pepper is."),
            ("book", "Recommend something to read on my holiday."),
            ("choir", "Is Tuesday night a good slot for a parents' evening?"),
            ("mother", "Where does my mum live?"),
            ("swim", "Can I take a 6pm Zoom call this Wednesday?"),
            ("yunnan", "Where am I planning to travel next summer?"),
            ("travel", "Should I book a guided package tour for my trip?"),
            ("knee", "Suggest a cardio workout that suits me."),
            ("husband", "我丈夫叫什么名字？"),
            ("veg2", "我现在还吃素吗？"),
            ("loc", "我住在哪座城市？", ("nbhd",)),
            ("knee", "以我的身体情况能去跑马拉松吗？"),
            ("swim", "周三晚上我有什么固定安排？"),
        ],
    ),
    # ---------------------------------------------------------------- u04 (zh)
    dict(
        uid="u04",
        main="zh",
        facts=[
            ("name", 0, "identity", "叫王磊"),
            ("age", 0, "identity", "今年36岁"),
            ("job", 0, "identity", "在深圳一家游戏公司做后端开发"),
            ("loc", 1, "location", "住在深圳南山区"),
            ("wife", 1, "relationship", "老婆叫刘静，是小学老师"),
            ("son", 2, "relationship", "儿子叫王子豪，在上小学二年级"),
            ("parents", 2, "relationship", "父母在湖南长沙老家"),
            ("smoke", 3, "constraint", "每天抽半包烟"),
            ("commute", 5, "preference", "每天开车上班"),
            ("gout", 8, "constraint", "有痛风，要少吃海鲜、少喝啤酒"),
            ("laozhang", 10, "relationship", "同事老张对海鲜过敏"),
            ("football", 12, "preference", "喜欢踢足球，每周六上午和朋友踢球"),
            ("go", 15, "preference", "Prefers code examples in Go rather than Python"),
            ("app", 20, "project", "Building a personal finance app as a side project"),
            ("band", 25, "preference", "Favorite band is Linkin Park"),
            ("emoji", 28, "preference", "Wants replies without emojis"),
            ("job2", 70, "identity", "跳槽到了一家新能源车企做架构师", "job"),
            ("smoke2", 100, "constraint", "已经戒烟三个月了", "smoke"),
            ("commute2", 110, "decision", "不再开车了，改坐地铁上班", "commute"),
        ],
        queries=[
            ("job2", "我现在在哪个行业的公司上班？"),
            ("job2", "帮我写段自我介绍，说说我现在的岗位"),
            ("smoke2", "我现在还抽烟吗？"),
            ("commute2", "我每天怎么去公司？"),
            ("commute2", "明早要不要提前出门避开堵车？"),
            ("gout", "今晚吃小龙虾配啤酒行不行？"),
            ("wife", "我老婆是干什么的？"),
            ("son", "孩子现在读几年级？"),
            ("football", "周六上午我一般在干嘛？"),
            ("parents", "我爸妈住在哪个城市？"),
            ("laozhang", "部门聚餐点菜要注意谁的忌口？"),
            ("loc", "我家在深圳哪个区？"),
            ("go", "写代码示例的时候用哪种编程语言给我？"),
            ("app", "我业余时间在做什么项目？"),
            ("band", "推荐几首我最喜欢的乐队的歌"),
            ("emoji", "回复我的时候可以加表情符号吗？"),
            ("son", "What grade is my kid in?"),
            ("smoke2", "Am I still a smoker?"),
            ("gout", "What health condition limits what I can eat and drink?"),
            (
                "go",
                "Show me a quick example of reading a file in my preferred programming language.",
            ),
            ("app", "What features could I add to the money-tracking thing I'm building?"),
        ],
    ),
    # ---------------------------------------------------------------- u05 (en)
    dict(
        uid="u05",
        main="en",
        facts=[
            ("name", 0, "identity", "Name is Marcus Johnson"),
            ("age", 0, "identity", "Is 27 years old"),
            ("job", 0, "identity", "Works night shifts as an ER nurse"),
            ("loc", 1, "location", "Lives in Chicago"),
            ("brother", 2, "relationship", "Older brother Andre lives in Atlanta"),
            ("gf", 3, "relationship", "Has a girlfriend named Jasmine"),
            ("lactose", 5, "constraint", "Is lactose intolerant"),
            ("kevin", 6, "relationship", "Roommate Kevin follows a keto diet"),
            ("bball", 8, "preference", "Plays pickup basketball on Sunday mornings"),
            ("hiphop", 10, "preference", "Listens mostly to 90s hip-hop"),
            (
                "sleep",
                12,
                "constraint",
                "Sleeps during the day after night shifts, so no calls before 2pm",
            ),
            ("car", 15, "decision", "Considering buying a used Tesla Model 3"),
            ("sichuan", 18, "preference", "喜欢吃川菜，越辣越好"),
            ("crna", 22, "project", "正在备考麻醉护士资格证"),
            ("concise", 25, "preference", "不喜欢长篇大论，回答要简短"),
            ("rent", 28, "constraint", "每月房租预算不超过1500美元"),
            ("car2", 60, "decision", "决定买丰田RAV4混动版，不买特斯拉了", "car"),
            ("loc2", 90, "location", "Moved to Austin, Texas", "loc"),
            ("gf2", 140, "relationship", "Got engaged to Jasmine", "gf"),
        ],
        queries=[
            ("loc2", "What's a good taco place in my city?"),
            ("loc2", "Which state do I need to register my nursing license in now?", ("job",)),
            ("gf2", "Put together a wedding planning checklist for me and my fiancée."),
            ("gf2", "Where do things stand between me and Jasmine now?"),
            ("lactose", "Can I have a milkshake?"),
            ("sleep", "Is 10am a good time to schedule my dentist call?"),
            ("hiphop", "Build me a playlist for the gym."),
            ("bball", "What's my usual weekend morning activity?"),
            ("brother", "Where does Andre live?"),
            ("kevin", "Is Kevin okay with pasta for dinner?"),
            ("job", "What shift do I normally work?"),
            ("age", "How old am I?"),
            ("car2", "Which car did I end up choosing?"),
            ("sichuan", "Find me a restaurant with really fiery food."),
            ("crna", "What certification am I studying for?"),
            ("rent", "What's the most I can pay for an apartment each month?"),
            ("concise", "Should your answers be long or short for me?"),
            ("loc2", "我现在住在哪个州？"),
            ("lactose", "我能喝牛奶吗？"),
            ("brother", "我哥哥住在哪里？"),
            ("car2", "我买车最后选了哪款？"),
            ("crna", "我在准备什么考试？"),
        ],
    ),
    # ---------------------------------------------------------------- u06 (zh)
    dict(
        uid="u06",
        main="zh",
        facts=[
            ("name", 0, "identity", "名字叫陈雨桐"),
            ("age", 0, "identity", "今年31岁"),
            ("job", 0, "identity", "在北京一家律所做知识产权律师"),
            ("nbhd", 1, "location", "住在北京朝阳区望京"),
            ("hometown", 1, "location", "老家是山东青岛"),
            ("lina", 2, "relationship", "最好的朋友李娜在上海做投行"),
            ("mom", 3, "relationship", "妈妈有高血压，一直在吃药"),
            ("bbq", 5, "preference", "最爱吃烤肉"),
            ("hamster", 6, "relationship", "养了一只叫团子的仓鼠"),
            ("stomach", 8, "constraint", "胃不好，不能喝冰的"),
            ("yoga", 10, "preference", "每周上三次瑜伽课"),
            ("chopin", 12, "preference", "喜欢听古典音乐，尤其是肖邦"),
            ("laws", 15, "preference", "Prefers answers that cite the relevant statutes"),
            ("bar", 20, "project", "Planning to take the New York bar exam next year"),
            ("slow", 25, "preference", "Loves slow travel - staying a week or more in one town"),
            (
                "friday",
                30,
                "constraint",
                "Unavailable on Friday afternoons because of court hearings",
            ),
            ("veg2", 80, "constraint", "开始吃全素了", "bbq"),
            ("nbhd2", 100, "location", "搬到了海淀区五道口", "nbhd"),
            ("pet2", 130, "relationship", "团子去世后，又养了一只叫布丁的布偶猫", "hamster"),
        ],
        queries=[
            ("nbhd2", "我家附近有什么好吃的素食餐厅？", ("veg2",)),
            ("nbhd2", "我现在住在北京哪一带？"),
            ("veg2", "周末聚餐去吃韩式烤肉怎么样？"),
            ("veg2", "我现在的饮食习惯是什么样的？"),
            ("pet2", "我现在养的是什么宠物？"),
            ("pet2", "布丁该打什么疫苗了？"),
            ("stomach", "我能点一杯冰美式吗？"),
            ("hometown", "我老家是哪里的？"),
            ("lina", "李娜现在在哪个城市工作？"),
            ("mom", "我妈的身体有什么需要注意的？"),
            ("yoga", "我每周固定做什么运动？"),
            ("chopin", "给我推荐几首钢琴曲"),
            ("bar", "我明年准备考什么？"),
            ("slow", "我喜欢怎样的旅行方式？"),
            ("friday", "周五下午能约客户见面吗？"),
            ("laws", "回答法律问题时要不要附上具体条文？"),
            ("pet2", "What kind of pet do I have now?"),
            ("job", "What area of law do I practise?"),
            ("stomach", "Is it okay for me to have iced drinks?"),
            ("laws", "How should you format answers to my legal questions?"),
            ("bar", "Which jurisdiction's licensing test am I preparing for?"),
        ],
    ),
    # ---------------------------------------------------------------- u07 (en)
    dict(
        uid="u07",
        main="en",
        facts=[
            ("name", 0, "identity", "Name is Sophie Martin"),
            ("age", 0, "identity", "Is 24"),
            ("job", 0, "identity", "PhD student in marine biology at UC San Diego"),
            ("loc", 1, "location", "Lives in San Diego, in Pacific Beach"),
            ("parents", 1, "relationship", "Parents live in Lyon, France"),
            ("advisor", 2, "relationship", "Her advisor is Professor Alan Reyes"),
            ("coffee", 3, "preference", "Drinks three cups of coffee a day"),
            ("style", 4, "preference", "Likes long, detailed explanations"),
            ("surf", 6, "preference", "Surfs most mornings before going to the lab"),
            ("celiac", 8, "constraint", "Has celiac disease, so must avoid gluten"),
            ("jake", 9, "relationship", "Labmate Jake is allergic to nuts"),
            ("laptop", 10, "constraint", "Budget for a new laptop is $1000"),
            ("thesis", 12, "project", "Thesis is on coral bleaching in the Pacific"),
            ("scifi", 15, "preference", "喜欢看科幻小说，最爱刘慈欣的《三体》"),
            ("luna", 18, "relationship", "养了一只叫Luna的黑猫"),
            ("ski", 22, "decision", "计划今年寒假去日本滑雪"),
            ("phone", 25, "constraint", "晚上十点以后不看手机"),
            ("style2", 60, "preference", "Now prefers short, to-the-point answers", "style"),
            ("coffee2", 90, "constraint", "已经完全戒掉咖啡因了", "coffee"),
            ("laptop2", 110, "constraint", "Raised the laptop budget to $1500", "laptop"),
        ],
        queries=[
            ("style2", "How much detail should you put in your answers to me?"),
            ("style2", "Should you write me an essay-style reply or keep it tight?"),
            ("laptop2", "What's the most I can spend on a new computer?"),
            ("laptop2", "Find me notebooks for coding that fit my price range."),
            ("celiac", "Is regular pasta okay for me?"),
            ("jake", "Can Jake have the almond cookies?"),
            ("advisor", "Who supervises my research?"),
            ("thesis", "What is my dissertation about?"),
            ("parents", "Where do my mom and dad live?"),
            ("surf", "What do I usually do before heading in to work?"),
            ("loc", "Which neighborhood do I live in?"),
            ("coffee2", "Can I grab an espresso before my seminar?"),
            ("scifi", "Recommend a book I'd enjoy."),
            ("luna", "What's my cat called?"),
            ("phone", "Is it okay to text me at 11pm?"),
            ("ski", "Where am I going over winter break?"),
            ("thesis", "我读博研究的是什么课题？"),
            ("celiac", "我可以吃普通面包吗？"),
            ("laptop2", "我买笔记本电脑的预算是多少？"),
            ("coffee2", "我现在还喝咖啡吗？"),
            ("scifi", "推荐几部和《三体》类似的作品"),
        ],
    ),
    # ---------------------------------------------------------------- u08 (zh)
    dict(
        uid="u08",
        main="zh",
        facts=[
            ("name", 0, "identity", "叫张浩然"),
            ("age", 0, "identity", "今年45岁"),
            ("job", 0, "identity", "在上海一家外贸公司当销售经理"),
            ("loc", 1, "location", "住在上海浦东新区"),
            ("wife", 1, "relationship", "妻子叫赵敏，是会计"),
            ("daughter", 1, "relationship", "女儿在读高三，明年高考"),
            ("brother", 2, "relationship", "弟弟在广州开餐馆"),
            ("sugar", 3, "constraint", "体检显示血糖偏高"),
            ("reno", 5, "decision", "打算明年装修房子，预算20万"),
            ("fishing", 6, "preference", "周末喜欢去郊区钓鱼"),
            ("wine", 8, "preference", "不喝白酒，只喝一点红酒"),
            ("laoli", 10, "relationship", "同事老李滴酒不沾"),
            ("puer", 12, "preference", "爱喝普洱茶"),
            ("tables", 15, "preference", "Prefers answers with tables when comparing options"),
            ("hamburg", 20, "project", "Preparing for a business trip to Hamburg in May"),
            ("beatles", 22, "preference", "Enjoys Beatles songs"),
            ("ielts", 25, "project", "Studying for the IELTS to improve his English"),
            ("sugar2", 70, "constraint", "确诊了二型糖尿病，需要控制碳水", "sugar"),
            ("daughter2", 120, "relationship", "女儿考上了浙江大学，学计算机", "daughter"),
            ("reno2", 130, "decision", "装修预算提高到了30万", "reno"),
        ],
        queries=[
            ("sugar2", "医生对我的身体状况下了什么诊断？"),
            ("sugar2", "晚饭能多吃一碗米饭吗？"),
            ("daughter2", "孩子现在在哪里上学？"),
            ("daughter2", "帮我列一份孩子开学要带的东西清单"),
            ("reno2", "装修我最多能花多少钱？"),
            ("wife", "我爱人做什么工作？"),
            ("brother", "我弟弟在哪个城市？"),
            ("fishing", "周末有什么适合我的休闲活动？"),
            ("wine", "应酬的时候我一般喝什么酒？"),
            ("laoli", "饭局上哪个同事不能劝酒？"),
            ("puer", "给我推荐点好茶叶"),
            ("loc", "我住在上海哪个区？"),
            ("tables", "对比两款手机时用什么格式给我看？"),
            ("hamburg", "我五月份要去哪里出差？"),
            ("ielts", "我在准备哪个英语考试？"),
            ("beatles", "放几首我爱听的老歌"),
            ("daughter2", "Which university did my daughter get into?"),
            ("reno2", "How much money have I set aside for the home renovation?"),
            ("puer", "What kind of tea do I like?"),
            ("hamburg", "Put together a packing list for my work trip to Germany."),
            ("ielts", "Give me a study plan for my English exam."),
        ],
    ),
    # ---------------------------------------------------------------- u09 (en)
    dict(
        uid="u09",
        main="en",
        facts=[
            ("name", 0, "identity", "Name is Liam O'Connor"),
            ("age", 0, "identity", "Is 38"),
            ("job", 0, "identity", "Works as a freelance wedding photographer"),
            ("loc", 1, "location", "Lives in Dublin"),
            ("nbhd", 1, "location", "Flat is in Rathmines"),
            ("wife", 1, "relationship", "Wife Aoife is a primary school teacher"),
            ("son", 2, "relationship", "Son Cian is 4 years old"),
            ("brother", 2, "relationship", "Brother Sean lives in Boston"),
            ("beer", 3, "preference", "Enjoys a pint of Guinness on Fridays"),
            ("rugby", 5, "preference", "Big Leinster rugby fan"),
            ("back", 6, "constraint", "Has chronic lower back pain"),
            ("aoife_veg", 7, "relationship", "Aoife doesn't eat meat"),
            ("cat", 8, "relationship", "Has a ginger cat named Whiskey"),
            ("kungpao", 12, "preference", "在学做中国菜，最拿手的是宫保鸡丁"),
            ("bnb", 15, "preference", "出门旅行喜欢住民宿，不爱住酒店"),
            ("therapy", 18, "constraint", "每周四下午要带儿子去做语言治疗"),
            ("jargon", 20, "preference", "希望回复时少用专业术语"),
            ("lighthouse", 25, "project", "Putting together a photo book about Irish lighthouses"),
            ("job2", 70, "identity", "Now a staff photographer at the Irish Times", "job"),
            ("beer2", 100, "constraint", "Has given up alcohol completely", "beer"),
        ],
        queries=[
            ("job2", "Who do I work for now?"),
            ("job2", "Update my email signature with my current role."),
            ("beer2", "Fancy a pint after work on Friday?"),
            ("beer2", "What should I drink at my mate's stag party?"),
            ("back", "Is lifting heavy boxes on moving day a good idea for me?"),
            ("rugby", "Which team should I watch on TV this weekend?"),
            ("son", "What's my boy's age?"),
            ("brother", "Where's Sean living these days?"),
            ("aoife_veg", "Plan a dinner menu my wife will actually eat."),
            ("cat", "What's the name of my cat?"),
            ("nbhd", "Which part of the city is my flat in?", ("loc",)),
            ("lighthouse", "What's my current book project about?"),
            ("kungpao", "Which dish do I love cooking most?"),
            ("bnb", "Book me somewhere to stay in Galway - what kind of place do I prefer?"),
            ("therapy", "Am I free Thursday at 3pm?"),
            ("jargon", "How technical should your explanations be for me?"),
            ("job2", "我现在在哪家报社工作？"),
            ("beer2", "我现在还喝酒吗？"),
            ("wife", "我太太是做什么的？"),
            ("therapy", "周四下午我要带儿子去干嘛？"),
            ("kungpao", "我最会做哪道中国菜？"),
        ],
    ),
    # ---------------------------------------------------------------- u10 (zh)
    dict(
        uid="u10",
        main="zh",
        facts=[
            ("name", 0, "identity", "名字叫刘芳"),
            ("age", 0, "identity", "今年52岁"),
            ("job", 0, "identity", "自己开了一家花店"),
            ("loc", 1, "location", "住在成都锦江区"),
            ("son", 1, "relationship", "儿子在北京读研究生"),
            ("husband", 2, "relationship", "老公叫李建国，是出租车司机"),
            ("dance", 3, "preference", "每天晚上跳广场舞"),
            ("bp", 4, "constraint", "有高血压，饭菜要少放盐"),
            ("parrot", 6, "relationship", "养了一只会说话的鹦鹉，叫小绿"),
            ("mahjong", 8, "preference", "喜欢打麻将"),
            ("spicy", 9, "preference", "无辣不欢"),
            ("neighbor", 10, "relationship", "邻居王阿姨对花粉过敏"),
            ("steps", 15, "preference", "Prefers answers in short numbered steps"),
            (
                "miniprogram",
                18,
                "project",
                "Learning to sell flowers online through a WeChat mini-program",
            ),
            ("teng", 20, "preference", "Favorite singer is Teresa Teng"),
            ("cruise", 22, "preference", "Dreams of taking a cruise around Southeast Asia"),
            ("loc2", 90, "location", "搬到了云南大理，把花店也开到了古城里", "loc"),
            ("dance2", 120, "preference", "不跳广场舞了，现在每天早上打太极拳", "dance"),
        ],
        queries=[
            ("loc2", "我现在住在哪个城市？"),
            ("loc2", "帮我看看我那边明天会不会下雨"),
            ("dance2", "我现在每天靠什么锻炼身体？"),
            ("dance2", "我还去跳广场舞吗？"),
            ("bp", "腌咸菜适合我吃吗？"),
            ("parrot", "小绿最近不爱开口了，是怎么回事？"),
            ("son", "儿子在哪里上学？"),
            ("husband", "老公是干什么的？"),
            ("mahjong", "周末约朋友玩点什么？"),
            ("spicy", "吃火锅我要点麻辣锅底还是清汤锅底？", ("bp",)),
            ("neighbor", "王阿姨来店里帮忙的话，有什么要注意的？"),
            ("job", "我是做什么生意的？", ("loc2",)),
            ("steps", "你解释事情的时候用什么格式我比较容易看懂？"),
            ("miniprogram", "我最近在学什么新本事？"),
            ("teng", "给我放几首我最喜欢的歌手的歌"),
            ("cruise", "我一直想来一趟什么样的旅行？"),
            ("loc2", "Which city did I move to?"),
            ("parrot", "What's the name of my bird?"),
            ("bp", "Do I need to watch my salt intake?"),
            ("teng", "Play something by my favourite singer."),
            ("cruise", "Find me a holiday at sea that stops in Thailand and Vietnam."),
        ],
    ),
    # ---------------------------------------------------------------- u11 (en)
    dict(
        uid="u11",
        main="en",
        facts=[
            ("name", 0, "identity", "Name is Hannah Schmidt"),
            ("age", 0, "identity", "Is 33"),
            ("job", 0, "identity", "UX researcher at a health-tech startup"),
            ("loc", 1, "location", "Lives in Berlin, in Kreuzberg"),
            ("parents", 1, "relationship", "Parents live in Munich"),
            ("bf", 2, "relationship", "Boyfriend Jonas is a chef"),
            ("vegan", 3, "constraint", "Is vegan"),
            ("mei", 4, "relationship", "Colleague Mei is allergic to eggs"),
            ("techno", 5, "preference", "Goes to techno clubs on weekends"),
            ("boulder", 6, "preference", "Does bouldering twice a week"),
            ("run", 8, "project", "Aiming to run a 10K in under 50 minutes"),
            ("feedback", 9, "preference", "Wants blunt, honest feedback, no sugarcoating"),
            ("chinese", 12, "project", "正在学中文，每周上两次课"),
            ("oolong", 14, "preference", "喜欢喝乌龙茶"),
            ("migraine", 16, "constraint", "有偏头痛，屏幕太亮就会头疼"),
            ("greece", 18, "preference", "每年夏天都去希腊的小岛度假"),
            ("vegan2", 70, "constraint", "Is vegetarian now - eats eggs and cheese again", "vegan"),
            ("loc2", 100, "location", "Relocated to Amsterdam, lives in De Pijp", "loc"),
            (
                "run2",
                130,
                "project",
                "New running goal: finish the Berlin Marathon in September",
                "run",
            ),
        ],
        queries=[
            ("loc2", "Which city am I living in these days?"),
            ("loc2", "Recommend a café within walking distance of my flat."),
            ("vegan2", "Can I have an omelette for breakfast?"),
            ("vegan2", "What does my current diet look like?"),
            ("run2", "What race am I training for?"),
            ("run2", "Build me a training plan for my next big running event."),
            ("mei", "What should I keep in mind when baking for Mei?"),
            ("bf", "What does Jonas do for a living?"),
            ("feedback", "How should you critique my draft?"),
            ("techno", "What are my weekend nights usually like?"),
            ("parents", "Where do my mum and dad live?"),
            ("boulder", "What indoor sport do I do a couple of times a week?"),
            ("chinese", "How often do I have language lessons?"),
            ("oolong", "Order me my usual tea."),
            ("migraine", "Should I turn down my screen brightness?"),
            ("greece", "Where do I usually go on summer holiday?"),
            ("loc2", "我现在住在哪里？"),
            ("bf", "我男朋友是做什么的？"),
            ("vegan2", "我现在还是纯素食者吗？"),
            ("oolong", "我一般喝什么茶？"),
            ("greece", "夏天我通常去哪儿度假？"),
        ],
    ),
    # ---------------------------------------------------------------- u12 (zh)
    dict(
        uid="u12",
        main="zh",
        facts=[
            ("name", 0, "identity", "叫赵子轩"),
            ("age", 0, "identity", "今年22岁"),
            ("job", 0, "identity", "在武汉大学读计算机专业，大四"),
            ("loc", 1, "location", "住在武汉"),
            ("parents", 1, "relationship", "爸妈在河南郑州"),
            ("single", 2, "relationship", "目前单身"),
            ("roommate", 3, "relationship", "室友小刘是素食主义者"),
            ("game", 4, "preference", "喜欢玩《原神》和《王者荣耀》"),
            ("bball", 5, "preference", "每天傍晚去球场打篮球"),
            ("budget", 6, "constraint", "每个月生活费1500块"),
            ("peanut", 7, "constraint", "对花生过敏"),
            ("jay", 8, "preference", "最喜欢周杰伦"),
            ("code", 10, "preference", "Prefers explanations with code snippets"),
            ("gradproj", 12, "project", "Working on a graduation project about image recognition"),
            ("japan", 14, "decision", "Wants to visit Japan after graduation"),
            ("nightowl", 16, "preference", "Is a night owl, most productive after 11pm"),
            ("job2", 100, "identity", "毕业后在广州一家互联网公司做前端工程师", "job"),
            ("loc2", 101, "location", "搬到了广州天河区", "loc"),
            ("gf2", 150, "relationship", "交了个女朋友，叫林可，是护士", "single"),
        ],
        queries=[
            ("loc2", "我现在在哪座城市生活？", ("job2",)),
            ("loc2", "帮我找找住处附近的篮球场", ("bball",)),
            ("job2", "我现在是做什么工作的？"),
            ("gf2", "我现在有对象吗？"),
            ("gf2", "女朋友生日快到了，她是做哪一行的来着？"),
            ("peanut", "宫保鸡丁我能吃吗？"),
            ("game", "我平时玩什么游戏？"),
            ("bball", "我一般什么时候运动？"),
            ("parents", "我爸妈住在哪？"),
            ("roommate", "小刘来我家吃饭，做什么菜好？"),
            ("jay", "周杰伦出新歌了吗？帮我找找"),
            ("budget", "我一个月能花多少钱？"),
            ("nightowl", "我一天里什么时候效率最高？"),
            ("gradproj", "毕业设计做的是什么方向？"),
            ("japan", "毕业旅行我想去哪个国家？"),
            ("code", "给我讲技术问题时要不要附上代码？"),
            ("loc2", "Where do I live now?"),
            ("peanut", "Is satay chicken safe for me?"),
            ("jay", "Who's my favourite singer?"),
            ("nightowl", "When's the best time of day for me to do deep work?"),
            ("gradproj", "What's my final-year project on?"),
        ],
    ),
    # ---------------------------------------------------------------- u13 (en)
    dict(
        uid="u13",
        main="en",
        facts=[
            ("name", 0, "identity", "Name is Priya Sharma"),
            ("age", 0, "identity", "Is 30"),
            ("job", 0, "identity", "Works as an accountant at a Big Four firm"),
            ("loc", 1, "location", "Lives in Toronto"),
            ("nbhd", 1, "location", "Condo is in Liberty Village"),
            ("parents", 1, "relationship", "Parents live in Mississauga"),
            ("husband", 2, "relationship", "Husband Arjun is a dentist"),
            ("beef", 3, "constraint", "Doesn't eat beef"),
            ("arjun_cats", 4, "relationship", "Arjun is allergic to cats"),
            ("fish", 5, "relationship", "Has two goldfish"),
            ("car", 6, "preference", "Drives a Honda Civic"),
            ("bolly", 7, "preference", "Loves her Bollywood dance classes"),
            (
                "taxseason",
                8,
                "constraint",
                "Too busy to socialize from February to April because of tax season",
            ),
            ("chai", 10, "preference", "喜欢喝印度奶茶"),
            ("peru", 12, "project", "正在准备明年去秘鲁徒步"),
            ("conclusion", 14, "preference", "希望回答先给结论，再讲理由"),
            ("anemia", 16, "constraint", "有轻度贫血，医生让多吃含铁的食物"),
            (
                "job2",
                80,
                "identity",
                "Quit the firm and started her own bookkeeping business",
                "job",
            ),
            ("pet2", 110, "relationship", "The goldfish died; now has a poodle named Coco", "fish"),
            ("car2", 140, "decision", "把车卖了，现在出门骑车或者坐地铁", "car"),
        ],
        queries=[
            ("job2", "What's my line of work now?"),
            ("job2", "Help me write an About page for my company's website."),
            ("pet2", "What pets do I have?"),
            ("pet2", "Coco needs a groomer - any tips for her breed?"),
            ("beef", "Is a steak dinner okay for me?"),
            ("arjun_cats", "Why can't we adopt a kitten?"),
            ("husband", "What does my husband do?"),
            ("taxseason", "Can I plan a girls' trip in March?"),
            ("bolly", "What fun class do I take?"),
            ("parents", "Where do my parents live?"),
            ("nbhd", "Which neighbourhood is my home in?", ("loc",)),
            ("car2", "How do I get around the city these days?"),
            ("car2", "Should I renew my auto insurance?"),
            ("peru", "What trek am I getting ready for?"),
            ("conclusion", "How should you structure your answers for me?"),
            ("anemia", "What foods should I eat more of for my health?"),
            ("job2", "我现在做什么工作？"),
            ("husband", "我老公是做什么的？"),
            ("nbhd", "我住在多伦多哪个街区？", ("loc",)),
            ("chai", "我喜欢喝什么茶？"),
            ("peru", "我明年要去哪里徒步？"),
        ],
    ),
    # ---------------------------------------------------------------- u14 (zh)
    dict(
        uid="u14",
        main="zh",
        facts=[
            ("name", 0, "identity", "名字叫孙美玲"),
            ("age", 0, "identity", "今年39岁"),
            ("job", 0, "identity", "在南京一家医院当儿科医生"),
            ("nbhd", 1, "location", "住在南京鼓楼区"),
            ("husband", 1, "relationship", "丈夫叫何伟，是大学老师"),
            ("preg", 2, "relationship", "怀孕五个月了"),
            ("milktea", 3, "preference", "每天都要喝一杯奶茶"),
            ("sister", 4, "relationship", "姐姐一家住在无锡"),
            ("night", 5, "constraint", "每周要值两个夜班"),
            ("penicillin", 6, "constraint", "对青霉素过敏"),
            ("hus_pollen", 7, "relationship", "丈夫对花粉过敏"),
            ("kunqu", 8, "preference", "喜欢听昆曲"),
            ("mystery", 9, "preference", "睡前爱看推理小说，最喜欢东野圭吾"),
            ("evidence", 12, "preference", "Prefers evidence-based answers with sources"),
            ("asthma", 15, "project", "Writing a paper on childhood asthma"),
            ("beach", 18, "preference", "Likes quiet beach holidays, no crowded tours"),
            ("shiba", 20, "relationship", "Has a Shiba Inu named Doudou"),
            ("baby2", 100, "relationship", "生了个儿子，小名叫糖糖", "preg"),
            ("milktea2", 120, "constraint", "开始戒糖，已经不喝奶茶了", "milktea"),
            ("nbhd2", 150, "location", "搬到了南京江宁区，离医院远了一些", "nbhd"),
        ],
        queries=[
            ("nbhd2", "我现在住在南京哪个区？"),
            ("nbhd2", "我家附近有什么早教中心？", ("baby2",)),
            ("milktea2", "下午茶给我点杯珍珠奶茶吧"),
            ("milktea2", "我现在对甜饮料是什么态度？"),
            ("baby2", "孩子的小名是什么？"),
            ("baby2", "宝宝的满月酒该怎么准备？"),
            ("penicillin", "感冒了开点阿莫西林行吗？"),
            ("night", "这周有几个晚上我不在家？"),
            ("hus_pollen", "春天带老公去公园赏花合适吗？"),
            ("sister", "我姐家在哪个城市？"),
            ("mystery", "推荐几本我可能喜欢的书"),
            ("kunqu", "周末想去听戏，我喜欢哪个剧种？"),
            ("evidence", "回答医学问题时要不要给出处？"),
            ("asthma", "我在写什么论文？"),
            ("shiba", "我家狗叫什么？"),
            ("beach", "假期我喜欢去什么样的地方？"),
            ("nbhd2", "Which district of Nanjing do I live in now?"),
            ("penicillin", "What antibiotic am I allergic to?"),
            ("husband", "What's my husband's job?"),
            ("shiba", "What breed is my dog?"),
            ("beach", "Find me a relaxing seaside getaway for the holidays."),
        ],
    ),
    # ---------------------------------------------------------------- u15 (en)
    dict(
        uid="u15",
        main="en",
        facts=[
            ("name", 0, "identity", "Name is James Wilson"),
            ("age", 0, "identity", "Is 62 and retired"),
            ("job", 0, "identity", "Used to be a civil engineer"),
            ("loc", 1, "location", "Lives in Sydney"),
            ("wife", 1, "relationship", "Wife Margaret loves gardening"),
            ("claire", 2, "relationship", "Daughter Claire lives in Melbourne with her two kids"),
            ("golf", 3, "preference", "Plays golf every Saturday"),
            ("hip", 4, "constraint", "Waiting for a hip replacement"),
            ("thinners", 5, "constraint", "Is on blood thinners"),
            ("bob", 6, "relationship", "Friend Bob has type 2 diabetes"),
            ("cricket", 7, "preference", "Follows cricket closely"),
            ("whisky", 8, "preference", "Enjoys single malt whisky"),
            ("rv", 10, "preference", "喜欢开房车自驾游"),
            ("video", 12, "project", "想学用智能手机拍视频，发给孙子孙女看"),
            ("bigfont", 14, "preference", "希望字体大一点，回答分步骤说明"),
            ("volunteer", 16, "constraint", "每周二上午去社区做志愿者"),
            ("loc2", 80, "location", "Moved to the Gold Coast to be near the beach", "loc"),
            (
                "hip2",
                100,
                "constraint",
                "Had hip replacement surgery and is recovering well",
                "hip",
            ),
            ("golf2", 140, "preference", "Gave up golf and now plays lawn bowls", "golf"),
        ],
        queries=[
            ("loc2", "Where do I live now?"),
            ("loc2", "What's the forecast for my area this weekend?"),
            ("hip2", "How is my recovery from the joint surgery going?"),
            ("hip2", "Am I still on the waiting list for my operation?"),
            ("golf2", "What sport do I play on weekends these days?"),
            ("golf2", "Should I book a tee time for Saturday?"),
            ("thinners", "Is it safe for me to take aspirin?"),
            ("bob", "What should I bring to Bob's barbecue so he can eat it?"),
            ("claire", "Where do my grandkids live?"),
            ("wife", "What's Margaret's favourite pastime?"),
            ("whisky", "Suggest a nice drop for my birthday."),
            ("job", "What did I do for a career?"),
            ("rv", "Plan a road trip for me - what's my style?"),
            ("video", "What tech skill am I trying to pick up?"),
            ("bigfont", "How should you format instructions for me?"),
            ("volunteer", "Am I free on Tuesday morning?"),
            ("loc2", "我现在住在哪里？"),
            ("claire", "我女儿住在哪个城市？"),
            ("thinners", "我能吃阿司匹林吗？"),
            ("volunteer", "我周二上午有什么安排？"),
            ("video", "我想学什么手机技能？"),
        ],
    ),
    # ---------------------------------------------------------------- u16 (zh)
    dict(
        uid="u16",
        main="zh",
        facts=[
            ("name", 0, "identity", "叫黄俊杰"),
            ("age", 0, "identity", "今年28岁"),
            ("job", 0, "identity", "在厦门一家健身房当私教"),
            ("loc", 1, "location", "住在厦门思明区"),
            ("gf", 1, "relationship", "女朋友叫陈思，在福州当老师"),
            ("parents", 2, "relationship", "爸妈在泉州开茶叶店"),
            ("diet", 3, "constraint", "正在增肌期，每天吃很多鸡胸肉"),
            ("lactose", 4, "constraint", "乳糖不耐受，不喝牛奶"),
            ("laozhou", 5, "relationship", "学员老周有糖尿病"),
            ("moto", 6, "preference", "周末喜欢骑摩托车环岛"),
            ("tgy", 7, "preference", "爱喝铁观音"),
            ("rap", 8, "preference", "喜欢听说唱"),
            ("quick", 10, "preference", "Prefers quick answers he can read between sessions"),
            (
                "kawasaki",
                12,
                "constraint",
                "Saving up for a new Kawasaki motorbike, budget about 80,000 yuan",
            ),
            ("oreo", 14, "relationship", "Has a cat named Oreo"),
            ("calls", 16, "constraint", "Can't take calls between 6 and 9pm - peak training hours"),
            ("job2", 90, "identity", "自己开了一家私教工作室", "job"),
            ("diet2", 120, "constraint", "现在改成减脂期，在吃低碳水饮食", "diet"),
        ],
        queries=[
            ("job2", "我现在是在健身房打工还是自己干？"),
            ("job2", "帮我写条朋友圈广告，推广一下我的生意"),
            ("diet2", "我这个阶段饮食上该怎么安排？"),
            ("diet2", "今天晚饭能吃一大碗米饭吗？"),
            ("lactose", "早餐来杯拿铁行不行？"),
            ("laozhou", "给老周设计饮食计划要注意什么？"),
            ("gf", "我女朋友在哪个城市？"),
            ("parents", "我爸妈是做什么的？"),
            ("moto", "周末我一般怎么放松？"),
            ("tgy", "我平时喝什么茶？"),
            ("rap", "帮我建个练器械时听的歌单"),
            ("loc", "我住在厦门哪个区？"),
            ("oreo", "我家猫叫什么？"),
            ("calls", "晚上七点给我打电话方便吗？"),
            ("kawasaki", "我在存钱买什么？"),
            ("quick", "你回复我的时候要写多长？"),
            ("diet2", "What's my current diet phase?"),
            ("lactose", "Can I drink milk?"),
            ("gf", "Where does my girlfriend live?"),
            ("kawasaki", "How much have I budgeted for my new bike?"),
            ("calls", "What's a good time to ring me in the evening?"),
        ],
    ),
    # ---------------------------------------------------------------- u17 (en)
    dict(
        uid="u17",
        main="en",
        facts=[
            ("name", 0, "identity", "Name is Chloe Nguyen"),
            ("age", 0, "identity", "Is 26"),
            ("job", 0, "identity", "Marketing coordinator at an outdoor-gear brand"),
            ("nbhd", 1, "location", "Rents an apartment in Kitsilano, Vancouver"),
            ("mom", 1, "relationship", "Mom runs a pho restaurant in Calgary"),
            ("bf", 2, "relationship", "Boyfriend Ryan is a firefighter"),
            ("latte", 3, "preference", "Orders a vanilla latte every morning"),
            ("bee", 4, "constraint", "Allergic to bee stings and carries an EpiPen"),
            ("ryan_gf", 5, "relationship", "Ryan is gluten-free"),
            ("kpop", 6, "preference", "Big K-pop fan, especially BTS"),
            ("volley", 7, "preference", "Plays in a rec volleyball league on Wednesday nights"),
            ("budget", 8, "constraint", "Trying to keep monthly spending under $2,000"),
            ("pho", 10, "preference", "爱吃越南河粉和春卷"),
            ("seoul", 12, "decision", "正在攒钱，明年去韩国首尔玩"),
            ("humor", 14, "preference", "希望回答轻松一点，可以带点幽默"),
            ("mochi", 16, "relationship", "养了一只叫Mochi的垂耳兔"),
            ("job2", 70, "identity", "Promoted to content strategist", "job"),
            ("latte2", 100, "preference", "Switched from lattes to iced matcha", "latte"),
            ("nbhd2", 130, "location", "Moved to Mount Pleasant, still in Vancouver", "nbhd"),
        ],
        queries=[
            ("latte2", "What's my usual café order now?"),
            ("latte2", "Grab me my regular morning drink."),
            ("job2", "What's my job title now?"),
            ("nbhd2", "Which neighbourhood do I live in?"),
            ("nbhd2", "Find a gym close to my place."),
            ("bee", "Do I need to bring my emergency medication to the flower garden tour?"),
            ("ryan_gf", "Ryan's coming over - can I make regular pasta?"),
            ("bf", "What does my boyfriend do?"),
            ("kpop", "Which group's concert should I get tickets for?"),
            ("volley", "Am I free on Wednesday evening?"),
            ("budget", "How much can I spend this month?"),
            ("mom", "What does my mom do, and where?"),
            ("pho", "Suggest a dinner I'd love."),
            ("seoul", "What's my travel plan for next year?"),
            ("humor", "What tone should you use with me?"),
            ("mochi", "What's my bunny called?"),
            ("nbhd2", "我现在住在温哥华哪个区？"),
            ("bf", "我男朋友是做什么的？"),
            ("bee", "我对什么过敏？"),
            ("mochi", "我的兔子是什么品种？"),
            ("seoul", "明年我打算去哪儿玩？"),
        ],
    ),
    # ---------------------------------------------------------------- u18 (zh)
    dict(
        uid="u18",
        main="zh",
        facts=[
            ("name", 0, "identity", "叫周文博"),
            ("age", 0, "identity", "今年41岁"),
            ("job", 0, "identity", "在西安一家建筑设计院当结构工程师"),
            ("loc", 1, "location", "住在西安高新区"),
            ("wife", 1, "relationship", "老婆叫许琳，开了一家烘焙店"),
            ("twins", 2, "relationship", "有一对双胞胎女儿，今年六岁"),
            ("mother", 3, "relationship", "母亲住在兰州，身体不太好"),
            ("run", 4, "preference", "每天早上跑五公里"),
            ("car", 5, "preference", "开一辆燃油版的大众帕萨特"),
            ("coffee", 6, "preference", "每天要喝两杯手冲咖啡"),
            ("cilantro", 7, "constraint", "受不了香菜的味道"),
            ("xiaozhao", 8, "relationship", "同事小赵是回族，不吃猪肉"),
            ("nba", 9, "preference", "爱看NBA，是勇士队的球迷"),
            ("diagrams", 11, "preference", "Prefers diagrams and sketches over long text"),
            ("museum", 13, "project", "Leading the structural design of a new museum in Xi'an"),
            ("roadtrip", 15, "preference", "Loves road trips through northwest China"),
            ("ulcer", 17, "constraint", "Cannot eat spicy food because of a stomach ulcer"),
            ("run2", 90, "preference", "膝盖受伤后不跑步了，改成游泳", "run"),
            ("car2", 120, "decision", "把帕萨特卖了，换了一辆比亚迪电动车", "car"),
        ],
        queries=[
            ("run2", "我现在平时做什么锻炼？"),
            ("run2", "周末的城市马拉松要不要帮我报个名？"),
            ("car2", "我现在开什么车？"),
            ("car2", "提醒我下班顺路去加油站把油加满"),
            ("cilantro", "点牛肉面的时候要跟老板交代什么？"),
            ("xiaozhao", "部门聚餐订餐厅要照顾谁？"),
            ("wife", "我老婆是做什么的？"),
            ("twins", "孩子们多大了？"),
            ("mother", "我妈住在哪里？"),
            ("nba", "今晚有没有我关心的球赛？"),
            ("coffee", "早上来杯什么提提神？"),
            ("job", "我在哪个单位上班？"),
            ("diagrams", "给我解释结构问题时用什么形式最好？"),
            ("museum", "我现在负责什么项目？"),
            ("roadtrip", "假期我喜欢怎么出去玩？"),
            ("ulcer", "我能吃麻辣火锅吗？"),
            ("run2", "Do I still go jogging?"),
            ("car2", "What car do I drive now?"),
            ("twins", "How old are my daughters?"),
            ("ulcer", "What should I order at a Sichuan restaurant, given my health?"),
            ("roadtrip", "Plan a driving holiday for me through Gansu and Qinghai."),
        ],
    ),
    # ---------------------------------------------------------------- u19 (en)
    dict(
        uid="u19",
        main="en",
        facts=[
            ("name", 0, "identity", "Name is Noah Kim"),
            ("age", 0, "identity", "Is 35"),
            ("job", 0, "identity", "Sous-chef at an Italian restaurant in Manhattan"),
            ("loc", 1, "location", "Lives in Brooklyn"),
            ("wife", 1, "relationship", "Wife Grace is a pharmacist"),
            ("julia", 2, "relationship", "Sister Julia lives in Seoul"),
            ("phone", 3, "preference", "Uses an Android phone, a Pixel"),
            ("shifts", 4, "constraint", "Works evenings, so is usually free only before 3pm"),
            ("chol", 5, "constraint", "Has high cholesterol"),
            ("grace_alc", 6, "relationship", "Grace doesn't drink alcohol"),
            ("soul", 7, "preference", "Collects vintage soul records"),
            ("yankees", 8, "preference", "Goes to Yankees games whenever he can"),
            ("kimchi", 10, "preference", "最爱吃妈妈做的泡菜汤"),
            ("restaurant", 12, "decision", "打算三年内开一家自己的小餐馆"),
            ("nosell", 14, "preference", "不喜欢被推销，回答时别推荐付费产品"),
            ("doubao", 16, "relationship", "养了一只叫豆包的法斗"),
            ("job2", 90, "identity", "Became head chef at a new trattoria in Queens", "job"),
            ("loc2", 110, "location", "Moved to Astoria, Queens", "loc"),
            ("phone2", 140, "preference", "换成了iPhone 15", "phone"),
        ],
        queries=[
            ("job2", "Where am I working these days?"),
            ("job2", "What's my position in the kitchen now?"),
            ("loc2", "What borough do I live in?", ("job2",)),
            ("loc2", "Find a laundromat near my apartment."),
            ("shifts", "Can I meet a friend for dinner at 7pm on a weekday?"),
            ("chol", "Is eggs-and-bacon every morning a good idea for me?"),
            ("grace_alc", "Should I pick up a bottle of wine for Grace?"),
            ("wife", "What does my wife do for work?"),
            ("julia", "Where does Julia live?"),
            ("yankees", "Which baseball team do I root for?"),
            ("soul", "What kind of vinyl do I collect?"),
            ("phone2", "Which phone am I using now?"),
            ("restaurant", "What's my long-term career goal?"),
            ("nosell", "Should you recommend premium apps to me?"),
            ("doubao", "What's my dog's name?"),
            ("loc2", "我现在住在纽约哪个区？"),
            ("wife", "我太太是做什么工作的？"),
            ("chol", "我吃东西有什么需要注意的健康问题？"),
            ("phone2", "我现在用的是什么手机？"),
            ("kimchi", "我最想吃妈妈做的哪道菜？"),
            ("doubao", "我家法斗叫啥？"),
        ],
    ),
    # ---------------------------------------------------------------- u20 (zh)
    dict(
        uid="u20",
        main="zh",
        facts=[
            ("name", 0, "identity", "名字叫何思琪"),
            ("age", 0, "identity", "今年34岁"),
            ("job", 0, "identity", "在重庆一家互联网公司做产品经理"),
            ("loc", 1, "location", "住在重庆渝北区"),
            ("bf", 1, "relationship", "男朋友叫杨帆"),
            ("yf_job", 1, "relationship", "杨帆是一名摄影师"),
            ("parents", 2, "relationship", "爸妈住在重庆江北区"),
            ("cousin", 3, "relationship", "表妹在上海读大学"),
            ("hotpot", 4, "preference", "特别爱吃火锅"),
            ("shrimp", 5, "constraint", "对虾过敏"),
            ("yf_spicy", 6, "relationship", "杨帆吃不了辣"),
            ("cat", 7, "relationship", "养了一只叫可乐的英短"),
            ("piano", 8, "preference", "小时候学过钢琴，现在偶尔还弹"),
            ("proscons", 10, "preference", "Likes answers that list pros and cons"),
            ("boutique", 12, "preference", "Prefers boutique hotels when travelling"),
            ("behavioral", 14, "preference", "Reads a lot of books on behavioral economics"),
            (
                "bed",
                16,
                "constraint",
                "Goes to bed by 11pm and doesn't reply to messages after that",
            ),
            ("job2", 80, "identity", "辞职去读全日制MBA了", "job"),
            ("loc2", 85, "location", "搬到了上海，住在杨浦区", "loc"),
            ("married2", 150, "relationship", "和杨帆结婚了", "bf"),
        ],
        queries=[
            ("loc2", "我现在在哪个城市生活？"),
            ("loc2", "帮我找一家离我住的地方近的健身房"),
            ("job2", "我现在还在上班吗？"),
            ("job2", "帮我规划一下这学期的时间"),
            ("married2", "我跟杨帆现在是什么关系？"),
            ("married2", "我老公叫什么名字？"),
            ("yf_job", "我另一半是干哪一行的？", ("married2",)),
            ("hotpot", "晚上吃什么好？想来点重口味的"),
            ("shrimp", "海鲜自助里我要避开哪些？"),
            ("yf_spicy", "跟杨帆一起吃饭，点菜要注意什么？"),
            ("cat", "可乐最近不吃猫粮怎么办？"),
            ("piano", "我会弹什么乐器？"),
            ("cousin", "我表妹在哪里读书？"),
            ("parents", "我爸妈住哪？"),
            ("proscons", "帮我做决定时用什么方式分析给我看？"),
            ("boutique", "出差订酒店我喜欢什么类型的？"),
            ("behavioral", "我最近在看哪类书？"),
            ("bed", "晚上十一点半给我发消息我会回吗？"),
            ("loc2", "Which city do I live in now?"),
            ("job2", "Am I still working as a product manager?"),
            ("shrimp", "Is a shrimp cocktail safe for me?"),
            ("behavioral", "Recommend a few titles on why people make irrational money decisions."),
            ("boutique", "Book me a stay in Kyoto that matches my taste."),
        ],
    ),
]

DESCRIPTION = (
    "Bilingual (English/Chinese) personal-memory recall benchmark. 20 users, each with an "
    "ordered list of short third-person facts stated over time (events, sorted by day), "
    "written mostly in the user's main language with about a fifth in the other language. "
    "Some facts supersede older ones (moves, job changes, new pets, diet and preference "
    "changes); queries about them expect the newer fact and list the older one as 'stale'. "
    "Users share the same kinds of facts with different values, and each user has "
    "distractor facts close to a target but wrong for the query (relatives' cities, "
    "colleagues' diets, similar drinks). Queries are paraphrased natural questions or "
    "requests; kind is '<query lang>-<fact lang>' (en-en, zh-zh, en-zh, zh-en). "
    "Hand-written; generated by bench/data/make_recall_dataset.py."
)

# ---------------------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------------------
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def detect_lang(text: str) -> str:
    return "zh" if _CJK.search(text) else "en"


def build() -> dict:
    rng = random.Random(SEED)
    users_out, queries_out = [], []
    for u in USERS:
        uid = u["uid"]
        facts = sorted(u["facts"], key=lambda f: f[1])  # stable: same-day facts keep order
        key_to_id: dict[str, str] = {}
        for i, f in enumerate(facts, 1):
            assert f[0] not in key_to_id, f"{uid}: duplicate fact key {f[0]}"
            key_to_id[f[0]] = f"{uid}-f{i:02d}"
        events, fact_info = [], {}
        for f in facts:
            key, day, cat, content = f[:4]
            sup_key = f[4] if len(f) > 4 else None
            assert cat in CATEGORIES, (uid, key, cat)
            if sup_key is not None:
                assert sup_key in key_to_id, (uid, key, sup_key)
            fid = key_to_id[key]
            ts = BASE_DATE + _dt.timedelta(
                days=day, hours=rng.randint(7, 22), minutes=rng.randint(0, 59)
            )
            ev = {
                "fact_id": fid,
                "content": content,
                "lang": detect_lang(content),
                "category": cat,
                "day": day,
                "timestamp": ts.strftime("%Y-%m-%dT%H:%M:00Z"),
                "supersedes": key_to_id[sup_key] if sup_key else None,
            }
            events.append(ev)
            fact_info[key] = ev
        users_out.append({"user_id": uid, "main_lang": u["main"], "events": events})

        superseded_by = {ev["supersedes"]: ev["fact_id"] for ev in events if ev["supersedes"]}
        for n, q in enumerate(u["queries"], 1):
            exp_key, text = q[0], q[1]
            also = q[2] if len(q) > 2 else ()
            assert exp_key in fact_info, (uid, exp_key, text)
            target = fact_info[exp_key]
            qlang = detect_lang(text)
            queries_out.append(
                {
                    "id": f"{uid}-q{n:02d}",
                    "user_id": uid,
                    "text": text,
                    "lang": qlang,
                    "kind": f"{qlang}-{target['lang']}",
                    "expected": target["fact_id"],
                    "also_relevant": [fact_info[k]["fact_id"] for k in also],
                    "stale": target["supersedes"],
                }
            )
        # an old fact must never be the expected answer
        for qo in queries_out:
            if qo["user_id"] == uid:
                assert qo["expected"] not in superseded_by, qo
                assert not set(qo["also_relevant"]) & set(superseded_by), qo
    return {"version": 1, "description": DESCRIPTION, "users": users_out, "queries": queries_out}


# ---------------------------------------------------------------------------------------
# Lexical overlap (rough proxy for "how many content words does the query share with the fact")
# ---------------------------------------------------------------------------------------
_EN_STOP = set(
    """
a an the and or but if of to in on at by for with from as is am are was were be been being do does
did done have has had i me my mine you your we our us he she his her him it its they them their this
that these those what which who whom whose when where why how can could should would will shall may
might must not no yes so than then too very just any some all more most much many each every about
into over after before up down out off again now still these days there here s t don let get got
go going make please remind tell give show find help put suggest recommend okay ok good usually
""".split()
)
_ZH_STOP = set(
    "我的了是在吗呢吧什么哪个怎么有没一个不也还都要会能你他她它们这那就和与及或很太最多少几些么啊呀哦嘛去来上下里中对给把被让为着过到说做想叫么儿啥些现"
)


def _en_terms(text: str) -> set[str]:
    out = set()
    for w in re.findall(r"[a-z0-9]+", text.lower().replace("'s", "")):
        if w in _EN_STOP or len(w) < 2:
            continue
        for suf in ("ing", "ed", "es", "s"):
            if w.endswith(suf) and len(w) - len(suf) >= 3:
                w = w[: -len(suf)]
                break
        out.add(w)
    return out


def _zh_terms(text: str) -> set[str]:
    out = set(_en_terms(re.sub(_CJK, " ", text)))
    for run in re.findall(r"[\u3400-\u9fff]+", text):
        for i in range(len(run) - 1):
            bg = run[i : i + 2]
            if bg[0] in _ZH_STOP or bg[1] in _ZH_STOP:
                continue
            out.add(bg)
    return out


def shared_terms(query: str, fact: str) -> int:
    terms = _zh_terms if detect_lang(query) == "zh" or detect_lang(fact) == "zh" else _en_terms
    return len(terms(query) & terms(fact))


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------
def validate(data: dict) -> dict:
    users = data["users"]
    queries = data["queries"]
    fact_owner, fact_by_id = {}, {}
    for u in users:
        days = [e["day"] for e in u["events"]]
        assert days == sorted(days), u["user_id"]
        assert 16 <= len(u["events"]) <= 20, (u["user_id"], len(u["events"]))
        other = sum(e["lang"] != u["main_lang"] for e in u["events"])
        assert 0.15 <= other / len(u["events"]) <= 0.3, (u["user_id"], other)
        for e in u["events"]:
            assert e["fact_id"] not in fact_owner, f"duplicate fact id {e['fact_id']}"
            assert e["fact_id"].startswith(u["user_id"] + "-")
            fact_owner[e["fact_id"]] = u["user_id"]
            fact_by_id[e["fact_id"]] = e
        for e in u["events"]:
            if e["supersedes"]:
                old = fact_by_id[e["supersedes"]]
                assert fact_owner[old["fact_id"]] == u["user_id"]
                assert old["day"] < e["day"], (old, e)
                assert old["category"] in (e["category"], "preference", "constraint", "decision")
    supersedes = {e["supersedes"]: e["fact_id"] for e in fact_by_id.values() if e["supersedes"]}
    assert len(set(supersedes)) == len([e for e in fact_by_id.values() if e["supersedes"]]), (
        "fact superseded twice"
    )

    qids = set()
    for q in queries:
        assert q["id"] not in qids, f"duplicate query id {q['id']}"
        qids.add(q["id"])
        assert q["expected"] in fact_owner and fact_owner[q["expected"]] == q["user_id"], q
        for a in q["also_relevant"]:
            assert fact_owner.get(a) == q["user_id"] and a != q["expected"], q
        target = fact_by_id[q["expected"]]
        assert (
            q["lang"] == detect_lang(q["text"]) and q["kind"] == f"{q['lang']}-{target['lang']}"
        ), q
        assert q["stale"] == target["supersedes"], q
        if q["stale"] is not None:
            assert (
                fact_owner[q["stale"]] == q["user_id"] and supersedes[q["stale"]] == q["expected"]
            ), q
        assert q["text"].strip() and q["text"].strip() != target["content"].strip(), q
    assert len(qids & set(fact_owner)) == 0

    # every updated (new) fact is asked about at least once
    asked = {q["expected"] for q in queries}
    for new in supersedes.values():
        assert new in asked, f"no query for updated fact {new}"

    kinds = Counter(q["kind"] for q in queries)
    stats = {
        "users": len(users),
        "users_by_main_lang": dict(sorted(Counter(u["main_lang"] for u in users).items())),
        "facts": len(fact_by_id),
        "facts_by_lang": dict(sorted(Counter(e["lang"] for e in fact_by_id.values()).items())),
        "facts_by_category": dict(
            sorted(Counter(e["category"] for e in fact_by_id.values()).items())
        ),
        "updated_facts": len(supersedes),
        "queries": len(queries),
        "queries_by_kind": {k: kinds[k] for k in ("en-en", "zh-zh", "en-zh", "zh-en")},
        "queries_with_stale": sum(q["stale"] is not None for q in queries),
        "queries_with_also_relevant": sum(bool(q["also_relevant"]) for q in queries),
    }
    assert stats["users"] == 20 and stats["users_by_main_lang"] == {"en": 10, "zh": 10}
    assert stats["facts"] >= 300
    assert stats["updated_facts"] >= 40
    assert stats["queries"] >= 400
    assert kinds["en-zh"] >= 60 and kinds["zh-en"] >= 60
    assert set(kinds) <= {"en-en", "zh-zh", "en-zh", "zh-en"}

    # lexical overlap between query and expected fact
    overlap = {}
    for kind in ("en-en", "zh-zh", "en-zh", "zh-en"):
        qs = [q for q in queries if q["kind"] == kind]
        shared = [shared_terms(q["text"], fact_by_id[q["expected"]]["content"]) for q in qs]
        overlap[kind] = {
            "<=1 shared": round(sum(s <= 1 for s in shared) / len(qs), 3),
            "0 shared": round(sum(s == 0 for s in shared) / len(qs), 3),
        }
    same = [q for q in queries if q["kind"] in ("en-en", "zh-zh")]
    same_shared = [shared_terms(q["text"], fact_by_id[q["expected"]]["content"]) for q in same]
    overlap["same-language"] = {
        "<=1 shared": round(sum(s <= 1 for s in same_shared) / len(same), 3),
        ">=1 shared": round(sum(s >= 1 for s in same_shared) / len(same), 3),
    }
    assert overlap["same-language"]["<=1 shared"] >= 0.5
    assert overlap["same-language"][">=1 shared"] >= 0.1
    stats["lexical_overlap"] = overlap
    return stats


def main() -> int:
    data = build()
    stats = validate(data)
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    OUT_PATH.write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {OUT_PATH}")
    print(f"users: {stats['users']} (main language: {stats['users_by_main_lang']})")
    print(f"facts: {stats['facts']} (by language: {stats['facts_by_lang']})")
    print(f"facts by category: {stats['facts_by_category']}")
    print(f"updated facts (supersede an older one): {stats['updated_facts']}")
    print(
        f"queries: {stats['queries']}  with stale answer: {stats['queries_with_stale']}  "
        f"with also_relevant: {stats['queries_with_also_relevant']}"
    )
    print("queries by kind: " + ", ".join(f"{k}={v}" for k, v in stats["queries_by_kind"].items()))
    print("share of queries with <=1 / 0 content terms shared with the expected fact:")
    for kind, v in stats["lexical_overlap"].items():
        print(f"  {kind}: " + ", ".join(f"{a}={b}" for a, b in v.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
