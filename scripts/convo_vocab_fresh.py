"""A second set of small talk and distractors for scripts/gen_convo_eval.py (``--filler fresh``).

Written independently of scripts/convo_vocab.py's lists, in a different
style (longer chatter, more questions, more first-person asides), so that a
ranking rule measured on both sets can be shown not to depend on the
wording of one of them (docs/search.md, "Guard rail"). Nothing in memex
reads this file. Placeholders as in convo_vocab: {S} a system, {S2} another
one, {A} an alias of {S}, {w} a value of some attribute, {word} the
attribute's word.
"""

from __future__ import annotations

SMALL_TALK_EN = [
    "hey, sorry I'm late, the lift was stuck on the fourth floor",
    "yep", "cool cool", "hmm", "right", "on it", "sure thing", "noted", "ha", "+1",
    "Has anybody seen my blue mug? It vanished from the kitchen.",
    "The heating in here is broken again, I'm wearing my coat at my desk.",
    "Who's up for a walk around the block after this call?",
    "I'm going to be a few minutes late to the next one, dentist appointment.",
    "Can everyone hear me okay? My headset is acting up.",
    "Quick reminder that it's Sam's birthday tomorrow, there's a card going round.",
    "Sorry, my cat just walked across the keyboard.",
    "I brought cookies, they're on the table by the printer.",
    "Is it just me or is this week going really slowly?",
    "Let's take this offline.", "Can we come back to that later?",
    "I'll loop in the others once we know more.",
    "Thanks everyone, that was a useful chat.",
    "I watched that documentary about octopuses you mentioned, wild.",
    "My kid has a school play tonight so I'm leaving at four.",
    "Does anyone know if the parking garage is open on weekends?",
    "I'm drowning in email today, bear with me.",
    "Good morning! Hope everyone had a restful weekend.",
    "I tried the new climbing gym on Saturday, my arms are dead.",
    "Who's hosting the retro this time?",
    "Sorry, I missed the last five minutes, what did I miss?",
    "I think my calendar is double booked again.",
    "Can you say that again? You cut out for a second.",
    "Let's pick this up tomorrow, my brain is fried.",
    "Totally, I had the same feeling.",
    "Agent, what's on my plate for the rest of today?",
    "Agent, please remind me to reply to the landlord.",
    "Sure, I've added that to your reminders.",
    "I can look into that if you'd like.",
    "Would you like me to set up a meeting for that?",
    "Honestly I have no strong feelings either way.",
    "That's fair, I hadn't thought about it like that.",
    "Okay, moving on to the next item.",
    "Is there any coffee left or did the morning crowd finish it?",
    "I'm so ready for the long weekend.",
    "Weather looks great for Saturday, finally.",
    "The office plants need watering, anyone volunteering?",
    "Did anyone else get that weird phishing email?",
    "My flight got delayed so I'm dialling in from the airport.",
    "Nice one, thanks for sorting that.",
    "I'll circle back on this.",
    "We're running over time, let's be quick.",
    "What time is the all-hands again?",
    "Could someone send me the invite? I can't find it.",
    "Ugh, Mondays.",
    "Can't believe it's already the end of the month.",
    "Shall we order in tonight or go out?",
    "I'm heading out for lunch, back in an hour.",
    "Good luck with the interview this afternoon!",
    "Sorry, wrong channel.",
]

DISTRACT_EN = [
    "Does anyone actually remember why {S} was set up the way it is?",
    "I was going to ask something about {A} but I forgot what it was.",
    "Note to self: read up on {S} when I get a moment.",
    "Someone should write a proper onboarding guide for {S} and {S2} one day.",
    "The {word} thing for {S} keeps coming up, we should decide at some point.",
    "I saw a talk about {w} last year, no idea if it applies to us.",
    "Are we still meeting about {S} on Thursday or did that get cancelled?",
    "I haven't touched {S} in months, honestly.",
    "Can someone explain to me what {A} even does? Asking for a friend.",
    "My cousin's startup uses {w} for everything, they love it.",
    "Whoever names our services, please stop, {S} and {S2} confuse everyone.",
    "Not today, but at some point I want to rethink the {word} of {S}.",
]

SMALL_TALK_ZH = [
    "嗯嗯", "对", "好嘞", "行", "了解", "哈哈", "我在",
    "电梯又坏了，我爬了八楼", "今天谁带饭了？", "外面下大雨了，大家带伞了吗",
    "我下午要去医院，请两个小时假", "你们听得到我说话吗？", "我的耳机好像有问题",
    "周五团建去哪儿还没定吗", "桌上有我带的水果，大家随便吃", "这周过得好慢啊",
    "我先下线了，明天见", "刚才网断了，我错过了什么？", "下周一放假吗？",
    "助手，提醒我下班前回个邮件", "好的，已经帮你设好提醒了。", "要不要我帮你约个会？",
    "今天的咖啡特别难喝", "我家猫把键盘踩了", "大家周末过得怎么样？",
    "我晚上有事，得早点走", "会议室又被占了", "这个下次再聊吧",
]

DISTRACT_ZH = [
    "{S}当初为什么这么设计，有人还记得吗？",
    "我本来想问{A}的事，结果忘了要问什么。",
    "回头有空研究一下{S}。",
    "{S}的{word}这个话题老是被提起来，迟早得定。",
    "去年听过一个讲{w}的分享，不知道对我们有没有用。",
    "谁能给我讲讲{A}到底是干嘛的？",
    "{S}和{S2}这俩名字真的容易弄混。",
]
