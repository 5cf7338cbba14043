"""Vocabulary for scripts/gen_convo_eval.py: who talks, about what, and how.

Kept apart from the generator so the phrasing can grow without touching the
logic. Nothing here is taken from tests/data/search_eval.jsonl: other
systems, other people, other values. Every attribute has several ways to
*state* a fact and several ways to *ask* about it, and the asking side
mostly uses an alias of the system ("the thing that ...") so that a
question often shares little more than a name with its answer.

Placeholders: {S} system name, {A} an alias of it, {P} a person, {v} the
value, {old} the value it replaces.
"""

from __future__ import annotations

from typing import Any

EN_USER = "Maya"
EN_AGENT = "Agent"
EN_TEAM = ["Ravi", "Lena", "Tomás", "Priya", "Jonas", "Aiko"]

SYSTEMS_EN: list[dict[str, Any]] = [
    {"name": "Kestrel", "aliases": ["the pipeline that pulls in partner feeds", "our event intake job"]},
    {"name": "Harbor", "aliases": ["the site customers log into", "the self-service portal for clients"]},
    {"name": "Lumen", "aliases": ["the engine that suggests products", "the recommendations backend"]},
    {"name": "Tally", "aliases": ["the money-tracking service", "the place where every payment gets recorded"]},
    {"name": "Beacon", "aliases": ["the thing that pings people on their phones", "the push alert sender"]},
    {"name": "Quarry", "aliases": ["the nightly copy into the analytics warehouse", "the reporting loader"]},
    {"name": "Fathom", "aliases": ["the product lookup backend", "the catalogue finder"]},
    {"name": "Sparrow", "aliases": ["the phone app", "our iOS and Android client"]},
    {"name": "Pylon", "aliases": ["the front door for all API traffic", "the request router in front of everything"]},
    {"name": "Juniper", "aliases": ["the back-office tool support staff use", "the admin console for the help desk"]},
    {"name": "Ember", "aliases": ["the toggle service", "the on/off switches for unfinished features"]},
    {"name": "Cobalt", "aliases": ["the GPU job scheduler", "the thing that queues model training runs"]},
]

# kind: what sort of value; word: how people name the attribute in passing.
ATTRS_EN: dict[str, dict[str, Any]] = {
    "language": {
        "values": ["Go", "Rust", "Kotlin", "Elixir", "Scala", "Zig", "OCaml", "Swift", "TypeScript"],
        "word": "language",
        "state": [
            "{S} is going to be written in {v}.",
            "We settled on {v} for {S}, the prototype convinced everyone.",
            "ok final answer: {S} gets built in {v}.",
            "I rewrote the core of {S} in {v} over the weekend and it's staying that way.",
            "For the record, {S} is a {v} codebase from here on.",
        ],
        "change": [
            "Change of plan: we're porting {S} from {old} to {v}.",
            "{S} moves to {v}; the {old} version gets retired next sprint.",
            "Heads up, {S} is being redone in {v}. {old} didn't scale for us.",
        ],
        "ask": [
            "Which language is {S} written in?",
            "What programming language did the team choose for {A}?",
            "what's {A} coded in these days?",
            "If I want to contribute to {A}, what language do I need to know?",
        ],
        "ask_old": ["Before the rewrite, what was {A} written in?", "Which language did {S} use originally?"],
        "hop": "what language is {X} written in",
    },
    "datastore": {
        "values": ["CockroachDB", "ClickHouse", "DynamoDB", "ScyllaDB", "MariaDB", "FoundationDB", "TimescaleDB", "Cassandra"],
        "word": "storage",
        "state": [
            "{S} will keep its data in {v}.",
            "For storage, {S} is going with {v}.",
            "We put {S}'s tables on {v}, cheaper than the other quote.",
            "{v} is the backing store for {S}, decided.",
        ],
        "change": [
            "We're migrating {S} off {old} onto {v} this month.",
            "{S} has outgrown {old}; it lands on {v} next week.",
        ],
        "ask": [
            "Where does {S} store its data?",
            "Which database sits behind {A}?",
            "what did we pick to persist the records of {A}?",
            "When {A} saves something, what ends up holding it?",
        ],
        "ask_old": ["What did {A} keep its data in before the migration?", "Which database did {S} start out on?"],
        "hop": "which database does {X} use",
    },
    "owner": {
        "values": EN_TEAM,
        "word": "owner",
        "state": [
            "{v} is taking ownership of {S} from now on.",
            "{S} belongs to {v}'s team now.",
            "If {S} breaks, page {v}. It's theirs.",
            "{v} volunteered to maintain {S}.",
        ],
        "change": [
            "{old} is handing {S} over to {v}.",
            "From Monday {v} looks after {S} instead of {old}.",
        ],
        "ask": [
            "Who owns {S}?",
            "Who is responsible for {A}?",
            "who should I ping when {A} falls over?",
            "Whose team maintains {A}?",
        ],
        "ask_old": ["Who looked after {A} before the handover?", "Who used to own {S}?"],
        "hop": None,
    },
    "deploy_day": {
        "values": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
        "word": "release day",
        "state": [
            "{S} ships every {v}.",
            "Releases of {S} go out on {v}s.",
            "let's keep {S} deploys to {v} afternoons.",
            "We agreed {v} is the release day for {S}.",
        ],
        "change": [
            "Moving the {S} release from {old} to {v}, fewer people are off that day.",
            "{S} now ships on {v} instead of {old}.",
        ],
        "ask": [
            "On which day does {S} get released?",
            "When in the week do we push {A} live?",
            "which weekday do we ship {A} on?",
        ],
        "ask_old": ["What day did {A} use to ship on?", "Which weekday were {S} releases on at first?"],
        "hop": "on which day does {X} ship",
    },
    "region": {
        "values": ["Frankfurt", "Dublin", "Oregon", "Singapore", "São Paulo", "Montreal", "Stockholm", "Sydney"],
        "word": "region",
        "state": [
            "{S} will run out of the {v} region.",
            "We host {S} in {v}.",
            "{S}'s servers live in {v} now, latency is fine.",
        ],
        "change": [
            "{S} is moving from {old} to {v} for latency.",
            "We relocated {S} to {v}; {old} is being drained.",
        ],
        "ask": [
            "Which region hosts {S}?",
            "Where geographically do the machines behind {A} live?",
            "in which data centre does {A} run?",
        ],
        "ask_old": ["Where was {A} hosted before the move?", "Which region did {S} start in?"],
        "hop": "where is {X} hosted",
    },
    "broker": {
        "values": ["NATS", "Pulsar", "RabbitMQ", "Kinesis", "ZeroMQ", "Kafka"],
        "word": "messaging",
        "state": [
            "{S} consumes its events from {v}.",
            "{S} talks to the other services over {v}.",
            "We wired {S} up to {v} for messaging.",
        ],
        "change": ["{S} drops {old} and switches to {v} for messaging.", "Replacing {old} with {v} inside {S}."],
        "ask": [
            "Which message broker does {S} use?",
            "How does {A} receive events from the rest of the system?",
            "what queueing tech is {A} hooked up to?",
        ],
        "ask_old": ["Which broker did {A} use before the switch?"],
        "hop": "which broker does {X} use",
    },
    "launch": {
        "values": ["April 14", "May 2", "May 19", "June 9", "June 30", "July 21", "August 4"],
        "word": "launch",
        "state": [
            "{S} goes live on {v}.",
            "Target launch for {S}: {v}.",
            "We promised the customer {S} by {v}.",
        ],
        "change": ["{S} slips from {old} to {v}, sorry all.", "New date for {S}: {v} instead of {old}."],
        "ask": [
            "When is {S} launching?",
            "What's the go-live date for {A}?",
            "by when do customers get {A}?",
        ],
        "ask_old": ["What was the original launch date for {A}?"],
        "hop": "when does {X} launch",
    },
    "timeout": {
        "values": ["8 seconds", "45 seconds", "2 minutes", "90 seconds", "500 milliseconds", "15 seconds"],
        "word": "timeout",
        "state": [
            "{S} gives up on upstream calls after {v}.",
            "The timeout for {S} is {v}.",
            "Set {S} to bail out after {v}, no retries beyond that.",
        ],
        "change": ["Bumping the {S} timeout from {old} to {v}.", "{S} now waits {v} instead of {old}."],
        "ask": [
            "How long does {S} wait before timing out?",
            "After how long does {A} abandon a slow call?",
            "what's the cutoff before {A} stops waiting on a dependency?",
        ],
        "ask_old": ["What was the timeout of {A} before we changed it?"],
        "hop": "what timeout does {X} use",
    },
}

PEOPLE_ATTRS_EN: dict[str, dict[str, Any]] = {
    "hometown": {
        "values": ["Porto", "Nairobi", "Kraków", "Osaka", "Valparaíso", "Tbilisi", "Halifax", "Ghent"],
        "state": [
            "I grew up in {v}, my parents still live there.",
            "Back home in {v} nobody eats dinner before nine.",
            "I'm from {v} originally.",
        ],
        "change": [],
        "ask": ["Where is {P} from?", "Which city did {P} grow up in?", "What's {P}'s hometown?"],
    },
    "pet": {
        "values": ["a beagle named Biscuit", "a grey cat called Mochi", "two rabbits", "a parrot named Kiwi",
                   "a tortoise called Dash", "a greyhound named Pixel"],
        "state": [
            "I adopted {v} last month.",
            "Have to leave early today, taking {v} to the vet.",
            "My kid insisted, so now we have {v}.",
        ],
        "change": [],
        "ask": ["What pet does {P} have?", "Does {P} have any animals at home?", "Which animal lives with {P}?"],
    },
    "hobby": {
        "values": ["bouldering", "sourdough baking", "chess", "marathon training", "pottery", "birdwatching", "salsa dancing"],
        "state": [
            "I spent the whole weekend on {v} again.",
            "{v} is how I switch off after work.",
            "Signed up for a {v} class on Thursdays.",
        ],
        "change": ["Gave up {old}, I'm all about {v} now.", "No more {old} for me, I've switched to {v}."],
        "ask": ["What does {P} do for fun?", "How does {P} unwind outside work?", "What's {P}'s hobby these days?"],
    },
    "trip": {
        "values": ["Iceland", "Lisbon", "Vietnam", "Patagonia", "the Dolomites", "Morocco", "Hokkaido"],
        "state": [
            "Booked flights to {v} for the summer break!",
            "In August I'll be in {v} for two weeks, offline.",
            "We're doing {v} this year for the holidays.",
        ],
        "change": ["Scrapped {old}, we're going to {v} instead.", "Change of holiday plans: {v}, not {old}."],
        "ask": ["Where is {P} going on holiday?", "Which destination did {P} book for vacation?",
                "when {P} is away this summer, where will they be?"],
    },
    "allergy": {
        "values": ["peanuts", "shellfish", "gluten", "sesame", "kiwi fruit"],
        "state": [
            "Can we not order from that place? I'm allergic to {v}.",
            "Careful with the snacks, {v} makes me really sick.",
        ],
        "change": [],
        "ask": ["What is {P} allergic to?", "Which food should we avoid ordering for {P}?", "what can't {P} eat?"],
    },
}

SMALL_TALK_EN = [
    "morning all", "ok", "thanks!", "haha yes", "let me check", "one sec", "makes sense", "agreed",
    "Anyone else freezing in the office today?", "Lunch at the ramen place?", "I'll grab coffee, want anything?",
    "My train was late again.", "Did you see the game last night?", "Back in five.", "brb, meeting",
    "That's a lot of rain for one week.", "Nice, good work.", "Can someone share their screen?",
    "I'll write that down.", "Sounds good to me.", "Not sure, let's ask later.", "lol",
    "Happy Friday everyone", "The wifi keeps dropping on this floor.", "Who's on the snack rota this week?",
    "I need a holiday.", "Let's wrap up in ten minutes.", "Good question, no idea.", "Sure, go ahead.",
    "I'll send the notes after this.", "Thanks for the summary.", "Can we timebox this?",
    "My laptop just restarted for updates, great timing.", "We should get pizza for the demo.",
    "Did the plumber ever show up?", "I finished that novel you recommended, loved it.",
    "The new espresso machine is a big upgrade.", "Is the standup moved today?", "Got it.",
    "Let me think about it over the weekend.", "Fair point.", "Ha, classic.", "Exactly what I was thinking.",
    "Who booked the big meeting room?", "I'm working from home tomorrow.", "Welcome back!",
    "How was the conference?", "Traffic was terrible this morning.", "Congrats on the promotion!",
    "I'll pick this up after lunch.", "Let's not bikeshed this.", "Anyone tried the new bakery downstairs?",
    "I can take notes today.", "Can you paste the link?", "Agent, can you summarise that for me?",
    "Here's a quick summary of what we covered so far.", "I've noted that down.",
    "Understood, I'll keep that in mind.", "Happy to help with that.", "Do you want me to draft a ticket?",
]

# Mentions of a system and an attribute word that state nothing: they share
# words with the questions and must not be mistaken for the answer.
DISTRACT_EN = [
    "Has anyone looked at {S}'s error graphs today?",
    "I keep mixing up {S} and {S2}, the names are too similar.",
    "Random thought: would {w} even make sense for something like {S}? Probably not, just curious.",
    "We still need to talk about {word} for {S}, let's park it for now.",
    "The {S} {word} discussion is on the agenda for next time.",
    "Reading a blog post about {w} on the train, interesting stuff.",
    "Is {A} down again or is it just me?",
    "{S} dashboards look green, nothing to report.",
    "Who wrote the docs for {S}? They're surprisingly good.",
    "I don't have an opinion on the {word} question for {S} yet.",
    "Someone at the meetup said {w} is overrated, I disagree.",
    "Let's not change anything about {S} before the audit.",
]

ZH_USER = "王磊"
ZH_AGENT = "助手"
ZH_TEAM = ["陈静", "刘洋", "赵敏", "孙浩"]

SYSTEMS_ZH: list[dict[str, Any]] = [
    {"name": "订单服务", "aliases": ["处理下单的那个后端", "下单系统"]},
    {"name": "推荐引擎", "aliases": ["给用户推荐商品的模块", "猜你喜欢那块"]},
    {"name": "日志平台", "aliases": ["收集日志的系统", "看日志的那个平台"]},
    {"name": "支付网关", "aliases": ["处理付款的入口", "收钱的那个接口层"]},
    {"name": "会员中心", "aliases": ["管理账号和积分的服务", "用户账户那套系统"]},
    {"name": "报表系统", "aliases": ["生成月度报表的工具", "给财务出数据的系统"]},
]

ATTRS_ZH: dict[str, dict[str, Any]] = {
    "language": {
        "values": ["Go", "Rust", "Java", "Python", "C++"],
        "word": "开发语言",
        "state": ["{S}决定用{v}来写。", "{S}最后定了用{v}开发。", "大家投票了，{S}就用{v}吧。"],
        "change": ["{S}要从{old}改成用{v}重写。", "{S}不再用{old}了，换成{v}。"],
        "ask": ["{S}是用什么语言写的？", "{A}用的是哪种编程语言？", "想给{A}提代码得会什么语言？"],
        "ask_old": ["{A}重写之前是用什么语言的？"],
        "hop": "用什么语言写的",
    },
    "datastore": {
        "values": ["TiDB", "MongoDB", "ClickHouse", "OceanBase", "HBase"],
        "word": "存储",
        "state": ["{S}的数据存在{v}里。", "{S}的存储选了{v}。", "{S}那边最后用了{v}，成本低一些。"],
        "change": ["{S}要从{old}迁到{v}。", "{S}的数据这个月搬到{v}，不用{old}了。"],
        "ask": ["{S}用什么数据库？", "{A}的数据放在哪里？", "{A}背后是哪个库在存东西？"],
        "ask_old": ["{A}迁移之前用的是什么数据库？"],
        "hop": "用哪个数据库",
    },
    "owner": {
        "values": ZH_TEAM,
        "word": "负责人",
        "state": ["{S}以后由{v}负责。", "{S}出问题就找{v}。", "{v}主动接手了{S}。"],
        "change": ["{S}从{old}交接给{v}了。", "下周起{S}改由{v}负责，{old}去做别的了。"],
        "ask": ["{S}归谁管？", "{A}有问题应该找谁？", "谁在维护{A}？"],
        "ask_old": ["交接之前{A}是谁负责的？"],
        "hop": None,
    },
    "launch": {
        "values": ["四月十五日", "五月八日", "六月一日", "六月二十日", "七月十日"],
        "word": "上线",
        "state": ["{S}计划{v}上线。", "{S}的上线时间定在{v}。", "跟客户说好了，{S}{v}前交付。"],
        "change": ["{S}的上线从{old}推迟到{v}。", "{S}改期了，{v}上线，不是{old}。"],
        "ask": ["{S}什么时候上线？", "{A}的发布日期是哪天？", "客户哪天能用上{A}？"],
        "ask_old": ["{A}原来定的上线日期是哪天？"],
        "hop": "哪天上线",
    },
    "region": {
        "values": ["上海", "北京", "深圳", "杭州", "新加坡"],
        "word": "机房",
        "state": ["{S}部署在{v}的机房。", "{S}的服务器放在{v}。"],
        "change": ["{S}从{old}迁到{v}的机房了。"],
        "ask": ["{S}部署在哪里？", "{A}的机器在哪个城市？"],
        "ask_old": ["{A}搬机房之前在哪？"],
        "hop": "部署在哪个城市",
    },
}

PEOPLE_ATTRS_ZH: dict[str, dict[str, Any]] = {
    "hometown": {
        "values": ["成都", "哈尔滨", "厦门", "西安", "昆明"],
        "state": ["我老家是{v}的。", "我在{v}长大，爸妈还住那边。"],
        "change": [],
        "ask": ["{P}是哪里人？", "{P}的老家在哪？"],
    },
    "hobby": {
        "values": ["爬山", "练书法", "下围棋", "烘焙", "游泳"],
        "state": ["周末我又去{v}了。", "下班以后我一般{v}放松一下。"],
        "change": ["我不{old}了，最近迷上了{v}。"],
        "ask": ["{P}平时喜欢做什么？", "{P}业余时间干什么？"],
    },
    "pet": {
        "values": ["一只叫豆豆的柯基", "一只橘猫", "两只仓鼠", "一只叫球球的萨摩耶"],
        "state": ["我家最近养了{v}。", "今天得早点走，带{v}去看兽医。"],
        "change": [],
        "ask": ["{P}养了什么宠物？", "{P}家里有小动物吗？"],
    },
    "trip": {
        "values": ["云南", "日本", "新疆", "冰岛"],
        "state": ["暑假我订了去{v}的机票！", "八月我要去{v}玩两周。"],
        "change": ["不去{old}了，改去{v}。"],
        "ask": ["{P}假期要去哪儿？", "{P}暑假的旅行目的地是哪里？"],
    },
}

SMALL_TALK_ZH = [
    "好的", "收到", "哈哈哈", "今天好热啊", "中午吃什么？", "我先去开个会", "晚点再说", "周末愉快！",
    "这个我回头看一下", "咖啡机又坏了", "早上好", "辛苦了", "明白", "可以的", "等我一下",
    "地铁今天又晚点了", "楼下新开了一家面馆", "下午的会取消了吗？", "我明天在家办公", "谢谢！",
    "这周好忙啊", "有人要奶茶吗？", "我把会议纪要发群里了", "稍等，我看看", "没问题",
    "助手，帮我总结一下刚才说的", "好的，我记下来了。", "需要我帮你建个任务吗？", "这个问题问得好",
]

DISTRACT_ZH = [
    "{S}的日志今天有点多，有人看了吗？",
    "上次说到{S}的{word}，我还没想好。",
    "{S}和{S2}名字太像了，老搞混。",
    "听说{w}挺好用的，不过跟{S}没关系。",
    "{A}是不是又挂了？",
    "{S}的{word}下次开会再讨论吧。",
    "看了篇讲{w}的文章，挺有意思。",
]
