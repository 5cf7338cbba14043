"""Rule-based extraction of long-term memories and summaries (no network).

Only what the *user* said is mined for memories: explicit preferences,
decisions, constraints and "always"/"never" rules, in English and Chinese.
Assistant text is summarized but never turned into memories, since an
assistant restating a rule would otherwise store it a second time and an
assistant's guesses are not the user's facts.

A user can plug in a model instead: ``[context] extract_command`` is run
with a JSON request on stdin and must print a JSON answer (see
docs/context-engine.md). If it fails, the rules are used and the failure is
reported in the commit result.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from dataclasses import dataclass
from typing import Any

from memex.context.tokens import content_text, newest_lines
from memex.errors import InvalidArgument
from memex.text import han_count, has_han, normalize

COMMAND_TIMEOUT = 120.0
_CODE = re.compile(r"```.*?```", re.DOTALL)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")
_EN = re.IGNORECASE

# Order matters: the first category whose pattern matches wins.
RULES: list[tuple[str, re.Pattern[str]]] = [
    ("decision", re.compile(
        r"\b(we|i) (have |'ve )?(decided|agreed|chose|settled on|are going with|will go with|"
        r"standardi[sz]ed on)\b|\blet'?s (go with|use|stick with)\b|\bdecision:", _EN)),
    ("decision", re.compile(r"我们决定|我决定|决定用|决定使用|我们选择|我们采用|就用|定下来")),
    ("constraint", re.compile(
        r"\b(always|never|must|must not|mustn't|do not ever|don't ever|should never|"
        r"is not allowed|are not allowed|is required|are required)\b", _EN)),
    ("constraint", re.compile(r"必须|不要|不许|禁止|不能|总是|永远不|务必|一定要|千万别|始终")),
    ("preference", re.compile(
        r"\b(i|we) (really )?(prefer|like|love|hate|dislike|want|would rather|'d rather)\b|"
        r"\bmy (favou?rite|preferred)\b|\bi'?m (a fan of|not a fan of)\b", _EN)),
    ("preference", re.compile(r"我喜欢|我更喜欢|我偏好|我倾向|我讨厌|我不喜欢|我习惯")),
]
_QUESTION = re.compile(r"[?？]\s*$|^(do|does|did|can|could|would|should|is|are|what|why|how|when|where|which)\b", _EN)
MIN_CHARS, MIN_CJK_CHARS, MAX_CHARS = 12, 4, 400

# "remember that ...", "don't forget ...", "记住 ..." as a request, not a question.
_KEYWORD = re.compile(
    r"(?:^|[.!;\n]\s*|\b(?:please|pls|also|and|hey|ok|okay|so|always|from now on|going forward|"
    r"in (?:the )?future),?\s+|"
    r"\b(?:can|could|would|will) you (?:please )?)"
    r"(remember|don'?t forget|do not forget|never forget|keep in mind|make a note)\b"
    r"(?:\s+(that|this|to))?\s*[:,]?\s*\S",
    re.IGNORECASE,
)
_KEYWORD_ZH = re.compile(r"(请?记住|记一下|记下来|别忘了|不要忘记|不要忘了)[:：，,]?\s*\S")

# "remember to <do something>" is about the task at hand, and not a memory,
# when its sentence points at that task or asks it as a question, unless it
# says it always holds (docs/context-engine.md, "Keyword capture").
_STANDING = re.compile(
    r"\b(?:always|never|every|each time|whenever|any ?time|from now on|going forward|in (?:the )?future|"
    r"by default|(?:before|after|when) (?:\w+ing)\b|this (?:repo|repository|project|codebase|code base|"
    r"team|company|service|app|workspace))",
    re.IGNORECASE,
)
_TASK_AT_HAND = re.compile(
    r"\b(?:this|these|first|now|then|later|today|tonight|tomorrow|next|afterwards|"
    r"when (?:you'?re|you are|we'?re|we are|it'?s|it is) (?:done|finished)|before (?:we|you) (?:merge|finish|leave))\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?;\n。！？；]")


def _sentence_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """Where the sentence of ``text`` holding ``text[start:end]`` begins and ends."""
    begin = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
    stop = _SENTENCE_END.search(text, end)
    return begin, stop.end() if stop else len(text)


def _for_the_task(text: str, match: re.Match[str]) -> bool:
    """Whether a "remember to ..." request is about the task at hand only."""
    if (match.group(2) or "").casefold() != "to":
        return False
    begin, stop = _sentence_bounds(text, match.start(1), match.end(2))
    if _STANDING.search(text, begin, stop):
        return False
    asked = text[begin:stop].rstrip().endswith("?")
    return asked or bool(_TASK_AT_HAND.search(text, match.end(2), stop))


@dataclass
class Extracted:
    text: str
    category: str
    confidence: float = 0.7

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "category": self.category, "confidence": self.confidence}


# A summary line ends at a full stop; a semicolon only separates rules.
_FULL_STOP = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")


def sentences(text: str, pattern: re.Pattern[str] = _SENTENCE) -> list[str]:
    text = _CODE.sub(" ", text)
    return [normalize(s) for s in pattern.split(text) if normalize(s)]


def classify(sentence: str) -> str | None:
    """The category of an explicit statement, or None."""
    if _QUESTION.search(sentence):
        return None
    for category, pattern in RULES:
        if pattern.search(sentence):
            return category
    return None


def _long_enough(sentence: str) -> bool:
    # A Chinese character is about a word; kana and hangul are syllables.
    if has_han(sentence):
        return han_count(sentence) >= MIN_CJK_CHARS
    return len(sentence) >= MIN_CHARS


def extract_rules(messages: list[dict[str, Any]]) -> list[Extracted]:
    """Explicit statements of the user worth keeping, in order, without repeats."""
    found: list[Extracted] = []
    seen: set[str] = set()
    for msg in messages:
        if msg.get("role") != "user":
            continue
        for sentence in sentences(_user_text(msg)):
            category = classify(sentence)
            if category is None or not _long_enough(sentence) or len(sentence) > MAX_CHARS:
                continue
            key = sentence.casefold()
            if key not in seen:
                seen.add(key)
                found.append(Extracted(sentence, category))
    return found


def _user_text(msg: dict[str, Any]) -> str:
    """A user message's own words: tool results are not the user speaking."""
    content = msg.get("content")
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return content_text(content)


KEYWORD_MAX_CHARS = 1000


def _requests(prompt: str) -> list[re.Match[str]]:
    """The prompt's requests to remember something for good (task-scoped ones left out)."""
    return [m for m in _KEYWORD.finditer(prompt) if not _for_the_task(prompt, m)]


def is_remember_request(prompt: str) -> bool:
    return bool(_requests(prompt) or _KEYWORD_ZH.search(prompt))


def remember_excerpt(prompt: str) -> str:
    """The prompt itself, or for a long one the verbatim part from the request on."""
    if len(prompt) <= KEYWORD_MAX_CHARS:
        return prompt
    match = next(iter(_requests(prompt)), None) or _KEYWORD_ZH.search(prompt)
    start = match.start(1) if match else 0
    # Back up to the start of that sentence ("Please remember ..." keeps "Please").
    cut = max(prompt.rfind(mark, 0, start) for mark in (". ", "! ", "? ", "\n", "。", "！", "？"))
    begin = cut + 1 if cut >= 0 else 0
    return prompt[begin : begin + KEYWORD_MAX_CHARS].strip()


# What a request to remember is *about*: the words after "remember that",
# "don't forget", "记住：" ... up to the end of their sentence. A sentence
# ends at . ! ? ; followed by a space or the end, or at a line break or a
# Chinese stop (a dot inside "api.example.com" or "v1.2" does not end it).
_FACT_END = re.compile(r"[.!?;](?=\s|$)|[\n。！？；]")
# Lead-ins kept with the fact: they say it always holds ("Always remember
# to run the tests" -> "Always run the tests").
_STANDING_LEAD = re.compile(r"^(always|never|from now on|going forward|in (?:the )?future)\b,?\s*", re.IGNORECASE)
_TRIM = " \t\n,:;.!?-—。！？；：，"
_BARE_OBJECT = re.compile(r"^(?:this|that|it|these|those|这个|这些|这点)?$", re.IGNORECASE)


def _previous_sentence(text: str, before: int) -> str:
    ends = [m.end() for m in _FACT_END.finditer(text, 0, before)]
    if not ends:
        return ""
    stop = ends[-1]
    begin = ends[-2] if len(ends) > 1 else 0
    return text[begin:stop].strip(_TRIM)


def _fact_of(text: str, match: re.Match[str], lead: str) -> str:
    """What one request asks to remember (see :func:`remember_facts`)."""
    first = match.end() - 1  # the keyword pattern ends on the fact's first character
    phrase_end = max(e for e in (match.end(1), match.end(2) if match.re is _KEYWORD else -1) if e is not None)
    if "\n" in text[phrase_end:first]:
        # "Remember this:" and the fact on the lines below, up to a blank line.
        fact = text[first:].split("\n\n", 1)[0].strip().rstrip(_TRIM)
    else:
        stop = _FACT_END.search(text, first)
        fact = text[first: stop.start() if stop else len(text)].strip(_TRIM)
        if _BARE_OBJECT.match(fact):  # "We ship on Fridays. Remember that." points back
            fact = _previous_sentence(text, match.start(1))
    standing = _STANDING_LEAD.match(lead.strip(_TRIM))
    if fact and standing:
        word = standing.group(1)
        fact = f"{word}{',' if ' ' in word else ''} {fact}"
    return fact[:KEYWORD_MAX_CHARS].strip()


def remember_facts(prompt: str) -> list[str]:
    """What the prompt's requests to remember ask to store, each as its own text.

    "We decided to use pnpm. Also, remember that integration tests need
    docker." asks to remember one fact, "integration tests need docker":
    the request's words after "remember that" / "don't forget" / "keep in
    mind" / "记住" to the end of their sentence, verbatim. A standing lead-in
    stays ("Always remember to run the tests" -> "Always run the tests").
    "Remember this:" takes the lines after it (to a blank line); "Remember
    that." the sentence before it. The rest of the prompt is left to the
    session's extraction (:func:`extract_rules`), like any other turn.
    """
    found: list[str] = []
    matches = [(m, m.group(0)[: m.start(1) - m.start()]) for m in _requests(prompt)]
    matches += [(m, "") for m in _KEYWORD_ZH.finditer(prompt)]
    for match, lead in sorted(matches, key=lambda pair: pair[0].start()):
        fact = _fact_of(prompt, match, lead)
        if fact and fact.casefold() not in {f.casefold() for f in found}:
            found.append(fact)
    return found


def summarize_rules(previous: str, turns: list[dict[str, Any]], max_tokens: int = 8000) -> str:
    """Extend ``previous`` with one line per message of ``turns`` (first sentence)."""
    lines = [ln for ln in previous.splitlines() if ln.strip()]
    for turn in turns:
        for msg in turn.get("messages", []):
            role = msg.get("role")
            if role not in ("user", "assistant"):
                continue
            text = _user_text(msg) if role == "user" else content_text(msg.get("content"))
            first = next(iter(sentences(text, _FULL_STOP)), "")
            if first:
                lines.append(f"- {role} (turn {turn.get('seq')}): {first[:240]}")
    # The oldest lines go first when the summary outgrows its share.
    return "\n".join(newest_lines(lines, max_tokens))


def run_command(command: str, request: dict[str, Any]) -> dict[str, Any]:
    """Run the user's extractor: JSON request on stdin, JSON answer on stdout."""
    argv = shlex.split(command)
    if not argv:
        raise InvalidArgument("extract_command", "is empty")
    try:
        done = subprocess.run(
            argv, input=json.dumps(request, ensure_ascii=False), capture_output=True,
            text=True, timeout=COMMAND_TIMEOUT, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InvalidArgument("extract_command", f"{argv[0]}: {exc}") from exc
    if done.returncode != 0:
        raise InvalidArgument(
            "extract_command", f"{argv[0]} exited {done.returncode}: {done.stderr.strip()[:200]}"
        )
    try:
        answer = json.loads(done.stdout)
    except ValueError as exc:
        raise InvalidArgument("extract_command", f"{argv[0]} printed no JSON: {exc}") from exc
    if not isinstance(answer, dict):
        raise InvalidArgument("extract_command", f"{argv[0]} must print a JSON object")
    return answer


def parse_command_answer(answer: dict[str, Any]) -> tuple[list[Extracted], str | None]:
    """Memories and summary from an extractor's answer; bad items are errors."""
    items = answer.get("memories", [])
    if not isinstance(items, list):
        raise InvalidArgument("extract_command", "'memories' must be a list")
    out: list[Extracted] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            raise InvalidArgument("extract_command", f"memories[{i}] needs a non-empty 'text'")
        confidence = item.get("confidence", 0.7)
        if not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
            raise InvalidArgument("extract_command", f"memories[{i}].confidence must be from 0 to 1")
        out.append(Extracted(item["text"].strip(), str(item.get("category") or "observation"), float(confidence)))
    summary = answer.get("summary")
    if summary is not None and not isinstance(summary, str):
        raise InvalidArgument("extract_command", "'summary' must be a string")
    return out, summary
