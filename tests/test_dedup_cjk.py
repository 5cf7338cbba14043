"""Chinese changed values and restatements the multilingual model scores like
paraphrases, and Chinese paraphrases the guards used to refuse (docs/models.md,
"Chinese dedup"). Pairs from tests/data/dedup_pairs_zh_dev2.jsonl and
dedup_pairs_zh.jsonl, the sets the rules were chosen on."""

from __future__ import annotations

import pytest

from memex.dedup.cjk import changes_cjk_value, narrows_requirement, swaps_cjk_span
from memex.dedup.numerals import cjk_values
from memex.dedup.values import conflicts
from memex.dedup.wording import changes_statement


@pytest.mark.parametrize(("a", "b"), [
    ("团队用飞书沟通。", "团队用Slack沟通。"),
    ("接口返回的时间统一用UTC。", "接口返回的时间统一用北京时间。"),
])
def test_a_name_swapped_for_a_latin_word_is_a_changed_value(a: str, b: str) -> None:
    assert swaps_cjk_span(a, b) and swaps_cjk_span(b, a)


@pytest.mark.parametrize(("a", "b"), [
    ("团队用飞书沟通。", "我们团队日常交流都在飞书上。"),
    ("接口返回的时间统一用UTC。", "API里的时间字段都是UTC时间。"),
    ("项目统一使用Python 3.11。", "项目统一使用 Python 3.11"),
])
def test_a_paraphrase_around_the_same_name_is_no_swap(a: str, b: str) -> None:
    assert not changes_cjk_value(a, b)


def test_a_narrowed_requirement_is_a_changed_value() -> None:
    assert narrows_requirement("发布前必须跑完整的回归测试。", "发布前只需要跑冒烟测试。")
    assert narrows_requirement("发版说明需要中英双语。", "发版说明只需要中文。")
    # 只有…才 restates a requirement.
    assert not narrows_requirement("合并请求必须通过所有CI检查。", "只有CI全部通过的合并请求才能合入。")


@pytest.mark.parametrize(("a", "b"), [
    ("用户偏好用中文交流。", "用户偏好用Markdown格式输出。"),
    ("用户喜欢先看结论再看细节。", "用户喜欢在回答里看到参考链接。"),
    ("用户希望代码示例用TypeScript写。", "用户希望代码示例附带单元测试。"),
    ("The staging server is at staging.example.com.", "The staging server is reset every night."),
])
def test_the_same_opening_then_another_statement_is_not_the_same_fact(a: str, b: str) -> None:
    assert changes_statement(a, b) and changes_statement(b, a)


@pytest.mark.parametrize(("a", "b"), [
    ("数据库连接池的大小是20。", "数据库连接池最多20个连接。"),  # the fact's number is in both
    ("发布前必须跑完整的回归测试。", "每次上线之前都要执行全量回归测试。"),  # a common ending, not opening
    ("用户对花生过敏。", "用户有花生过敏症。"),
    ("Log files are rotated daily and kept for 14 days.", "Logs rotate every day and are kept for 14 days."),
    ("用户住在上海。", "用户目前居住在上海。"),  # the rest of one side is empty
])
def test_a_paraphrase_is_no_changed_statement(a: str, b: str) -> None:
    assert not changes_statement(a, b)


@pytest.mark.parametrize(("a", "b"), [
    ("用户讨厌开会。", "这位用户很不喜欢开会。"),  # 不喜欢 is 讨厌, no negation
    ("用户不喜欢长篇大论的解释。", "这位用户讨厌冗长的解释。"),
    ("线上数据库每天凌晨两点做全量备份。", "生产库的全量备份在每天夜里2点执行。"),  # 2:00 both
    ("每个季度做一次灾备演练。", "灾难恢复演练每三个月进行一次。"),
])
def test_chinese_paraphrases_the_guards_used_to_refuse(a: str, b: str) -> None:
    assert not conflicts(a, b)


@pytest.mark.parametrize(("a", "b"), [
    ("用户喜欢开会。", "用户不喜欢开会。"),
    ("用户喜欢开会。", "用户讨厌开会。"),
    ("每个季度做一次灾备演练。", "每个月做一次灾备演练。"),
    ("每天夜里两点备份。", "每天下午两点备份。"),
])
def test_chinese_changes_still_conflict(a: str, b: str) -> None:
    assert conflicts(a, b)


def test_night_hours_stay_small_and_evening_hours_move_past_noon() -> None:
    assert cjk_values("夜里2点")[0] == cjk_values("凌晨两点")[0] == {"2:00"}
    assert cjk_values("晚上八点")[0] == {"20:00"}
    assert cjk_values("晚上十一点")[0] == {"23:00"}
