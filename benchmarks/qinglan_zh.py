"""Write and check the Chinese development set ``benchmarks/qinglan-zh/`` (issue 13).

Qinglan Instruments (青岚仪器) is a made-up company, so a model cannot answer from memory: every
fact has to come from the documents. The corpus holds its rules in Chinese (and a few documents
in English), each with ``year``, ``scope`` and ``acl`` metadata; older or other-scope versions of a
rule state different numbers, to tempt a retriever that ignores the filters; a few documents are
only for ``hr``, ``finance`` or ``security``.

Each question carries the trusted ``filters`` it is asked under, its gold ``facts`` (each a list of
acceptable forms; numbers are compared after normalisation, so 五个工作日 = 5个工作日), the
``stale`` facts that only excluded versions state, and the ``secret`` facts that only documents
outside the caller's permissions state. Questions with no gold facts are permission probes: the
answer is in a document the caller may not see.

Running the script checks the ground truth before writing it: every supporting document passes
the question's filters and states every gold fact (one of its forms); no document the filters
let through states a stale or secret fact. Run it from the repository root::

    .venv/bin/python benchmarks/qinglan_zh.py            # writes benchmarks/qinglan-zh/*.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from flare.evaluate.facts import fact_in
from flare.retrieve.filters import Filters

OUT = Path(__file__).resolve().parent / "qinglan-zh"

S = ["staff"]
P = ["public", "staff"]


def doc(
    id: str, title: str, text: str, year: int, scope: str | list[str], acl: list[str], lang: str = "zh"
) -> dict[str, Any]:
    """A corpus document with its metadata."""
    return {"id": id, "title": title, "text": text,
            "meta": {"year": year, "scope": [scope] if isinstance(scope, str) else scope, "acl": acl, "lang": lang}}


DOCS = [
    # -- the company ------------------------------------------------------------------------------
    doc("org-2026", "公司简介（2026年版）",
        "青岚仪器有限公司于2009年在云湾市成立，创始人是工程师蔺晓舟。公司研发和生产水质监测仪器，总部位于云湾市"
        "滨江区。截至2026年初，公司共有员工420人，其中研发人员160人。", 2026, "全员", P),
    doc("org-2024", "公司简介（2024年版）",
        "青岚仪器有限公司于2009年在云湾市成立。截至2024年初，公司共有员工360人，其中研发人员120人。",
        2024, "全员", P),
    doc("leaders-2026", "管理团队",
        "2023年起，青岚仪器的首席执行官是方绮月，她此前担任研发中心主任。创始人蔺晓舟现任董事长，分管战略规划。",
        2026, "全员", P),
    doc("leaders-2021", "管理团队（2021年）",
        "2016年至2022年，青岚仪器的首席执行官是韩松涛。方绮月当时担任研发中心主任。", 2021, "全员", P),
    doc("org-en", "Qinglan Instruments at a glance",
        "Qinglan Instruments was founded in 2009 in Yunwan by the engineer Lin Xiaozhou. Its overseas sales "
        "office opened in Singapore in 2019 and serves customers in eleven countries.", 2026, "全员", P, "en"),
    # -- products -----------------------------------------------------------------------------------
    doc("ql200", "QL-200 多参数水质仪",
        "QL-200 是青岚仪器的便携式多参数水质仪，可测量pH、溶解氧和浊度。一块电池可连续工作18个月，整机重2.4公斤，"
        "2025年售价为每台38,000元。", 2025, "全员", P),
    doc("ql210", "QL-210 多参数水质仪",
        "QL-210 是 QL-200 的升级型号，于2026年3月上市，在 QL-200 的基础上增加了电导率测量。电池续航延长到24个月，"
        "整机重2.1公斤，售价为每台42,000元。", 2026, "全员", P),
    doc("ql300", "QL-300 在线监测站",
        "QL-300 是安装在河道岸边的在线水质监测站，每15分钟上传一次数据，支持4G网络和北斗短报文两种通信方式，"
        "防护等级为IP68。", 2026, "全员", P),
    doc("ql300-en", "QL-300 datasheet",
        "The QL-300 online monitoring station operates between -20 and 55 degrees Celsius. Its solar panel "
        "delivers 80 watts, and a full battery keeps the station running for 7 days without sun.",
        2026, "全员", P, "en"),
    doc("fw-ql200", "QL-200 固件更新说明",
        "QL-200 固件 v3.2 于2025年9月发布，修复了溶解氧读数漂移的问题。升级前须将电量充至50%以上。", 2025, "全员", P),
    doc("std-118-2025", "企业标准 QL/T 118-2025",
        "企业标准 QL/T 118-2025 规定了 QL-200 和 QL-210 的校准流程：每90天校准一次，校准须使用编号为 CAL-7 的"
        "标准溶液套装。", 2025, "全员", S),
    doc("std-118-2023", "企业标准 QL/T 118-2023（已废止）",
        "企业标准 QL/T 118-2023 已于2025年废止。该标准曾规定 QL-200 每120天校准一次，使用 CAL-5 标准溶液套装。",
        2023, "全员", S),
    doc("std-120-2025", "企业标准 QL/T 120-2025",
        "企业标准 QL/T 120-2025 规定了 QL-300 的现场安装要求：立杆高度不低于3米，设备距离水面不少于1.5米。",
        2025, "全员", S),
    doc("warranty-2026", "售后-2026 保修政策",
        "自2026年起，QL-200 和 QL-210 整机保修2年，传感器探头保修1年；QL-300 整机保修3年。保修期内客服24小时内"
        "响应，48小时内派工程师到现场。", 2026, "全员", P),
    doc("warranty-2024", "售后-2024 保修政策（已废止）",
        "2024年销售的 QL-200 整机保修18个月，传感器探头保修6个月。", 2024, "全员", P),
    # -- travel -------------------------------------------------------------------------------------
    doc("travel-2026-03", "差旅-2026-03 境内出差审批",
        "文件编号：差旅-2026-03。自2026年1月1日起，境内出差须在出发前至少3个工作日通过“岚途”系统提交申请，由部门"
        "负责人审批。城际交通优先选择高铁二等座。", 2026, "境内", S),
    doc("travel-2026-04", "差旅-2026-04 境内差旅报销",
        "文件编号：差旅-2026-04。境内出差结束后30个自然日内提交报销票据，审批通过后5个工作日内付款。住宿标准为一线"
        "城市每晚不超过600元，其他城市每晚不超过450元。", 2026, "境内", S),
    doc("travel-2026-07", "差旅-2026-07 境外出差",
        "文件编号：差旅-2026-07。境外出差须在出发前至少20个工作日提交申请，由分管副总裁审批。回国后45个自然日内"
        "提交报销票据，审批通过后10个工作日内付款。单程飞行超过8小时可预订超级经济舱。", 2026, "境外", S),
    doc("travel-2025-02", "差旅-2025-02 境内差旅管理办法（已废止）",
        "文件编号：差旅-2025-02。2025年境内出差须提前7个工作日申请；出差结束后60个自然日内提交票据，审批通过后"
        "15个工作日内付款；一线城市住宿每晚不超过500元。", 2025, "境内", S),
    doc("travel-2025-05", "差旅-2025-05 境外出差（已废止）",
        "文件编号：差旅-2025-05。2025年境外出差须提前25个工作日申请，回国后90个自然日内提交票据，审批通过后"
        "30个工作日内付款。", 2025, "境外", S),
    doc("allowance-2026-en", "Daily travel allowance 2026",
        "From 2026 the daily travel allowance is 180 yuan for domestic trips and 60 US dollars for trips abroad. "
        "The allowance is paid together with the expense refund and needs no receipts.",
        2026, ["境内", "境外"], S, "en"),
    doc("allowance-2025-en", "Daily travel allowance 2025",
        "In 2025 the daily travel allowance was 150 yuan for domestic trips and 50 US dollars for trips abroad.",
        2025, ["境内", "境外"], S, "en"),
    # -- purchasing -------------------------------------------------------------------------------
    doc("buy-2026-01", "采购-2026-01 采购审批",
        "文件编号：采购-2026-01。单笔采购金额超过5万元的，须向至少三家供应商询价比价；超过50万元的，须提交采购"
        "委员会审议。采购申请在“岚采”系统中发起。", 2026, "全员", S),
    doc("buy-2024-01", "采购-2024-01 采购审批（已废止）",
        "文件编号：采购-2024-01。单笔采购超过3万元须三家比价，超过30万元须总经理审批。", 2024, "全员", S),
    doc("buy-2026-02", "采购-2026-02 供应商付款",
        "文件编号：采购-2026-02。供应商货款在验收合格并收到发票后45天内支付，预付款不得超过合同金额的30%。",
        2026, "全员", S),
    # -- leave and remote work ----------------------------------------------------------------------
    doc("leave-2026", "假期-2026-01 年假与家庭关怀假",
        "自2026年起，员工累计工作满1年不满10年的，年假为10天；满10年不满20年的，年假为15天；满20年的，年假为20天。"
        "2026年起新增每年2天家庭关怀假，用于照顾家人。", 2026, "全员", S),
    doc("leave-2024", "假期-2024-01 年假（已废止）",
        "2024年员工工作满1年不满10年的，年假为6天；满10年的，年假为12天。", 2024, "全员", S),
    doc("leave-en-2026", "Leave FAQ 2026",
        "Unused annual leave from 2026 can be carried over until 31 March 2027. A request for more than five "
        "consecutive days off must reach the department head two weeks in advance.", 2026, "全员", S, "en"),
    doc("remote-2026-rd", "远程-2026 研发中心远程办公",
        "2026年研发中心员工每周可远程办公2天，每周三为全员到岗日。远程办公须在前一日18点前在“岚途”系统登记。",
        2026, "研发", S),
    doc("remote-2026-sales", "远程-2026 销售部远程办公",
        "2026年销售部员工每周可远程办公1天，拜访客户的日子不计入远程办公。", 2026, "销售", S),
    doc("remote-2025-rd", "远程-2025 研发中心远程办公（已废止）",
        "2025年研发中心员工每周可远程办公1天，每周一为全员到岗日。", 2025, "研发", S),
    # -- security -------------------------------------------------------------------------------------
    doc("sec-2026-01", "安全-2026-01 账号与密码",
        "文件编号：安全-2026-01。员工账号密码不少于12位，每180天更换一次；登录办公系统必须使用“岚盾”应用进行"
        "双因素认证。", 2026, "全员", S),
    doc("sec-2024-01", "安全-2024-01 账号与密码（已废止）",
        "文件编号：安全-2024-01。员工账号密码不少于8位，每90天更换一次。", 2024, "全员", S),
    doc("sec-2026-05", "安全-2026-05 数据分级",
        "文件编号：安全-2026-05。公司数据分为公开、内部、机密三级。机密数据只能存放在“岚库”加密存储中，禁止通过"
        "即时通讯工具发送。", 2026, "全员", S),
    doc("sec-2026-09", "安全-2026-09 渗透测试报告",
        "2026年4月的渗透测试发现3个高危漏洞，均已在5月20日前修复，涉及的系统是岚采采购平台。",
        2026, "全员", ["security"]),
    # -- pay, budget, training, hospitality ---------------------------------------------------------
    doc("pay-2026", "薪酬-2026 研发薪级",
        "2026年研发工程师的月薪范围为18,000元至32,000元，年终奖于次年1月25日发放。", 2026, "研发", ["hr"]),
    doc("budget-2026", "预算-2026 研发投入",
        "2026年公司研发预算为1.2亿元，其中 QL-300 项目分配3,600万元。", 2026, "全员", ["finance"]),
    doc("train-2026", "培训-2026-01 新员工培训",
        "2026年新员工入职培训为期5天，第3天进行信息安全考试，80分及以上为通过。每位员工每年的培训预算为4,000元。",
        2026, "全员", S),
    doc("train-2025", "培训-2025-01 新员工培训（已废止）",
        "2025年新员工入职培训为期4天，每位员工每年的培训预算为3,000元。", 2025, "全员", S),
    doc("hospitality-2026", "招待-2026-01 业务招待",
        "文件编号：招待-2026-01。销售部业务招待每人每餐不超过200元，单次招待总额超过2,000元须提前在“岚途”系统"
        "报备。", 2026, "销售", S),
]

Y26 = ["year=2026", "acl=staff"]


Facts = list[list[str] | str]


def q(question: str, filters: list[str], facts: Facts, support: list[str],
      stale: Facts | None = None, secret: Facts | None = None) -> dict[str, Any]:
    """A question; each fact is one form or a list of acceptable forms."""
    return {"question": question, "filters": filters, "facts": _forms(facts), "supporting_ids": support,
            "stale": _forms(stale or []), "secret": _forms(secret or [])}


def _forms(facts: Facts) -> list[list[str]]:
    return [[f] if isinstance(f, str) else f for f in facts]


QUESTIONS = [
    # the company
    q("青岚仪器是哪一年在哪座城市成立的？创始人是谁？", Y26, ["2009", "云湾市", "蔺晓舟"], ["org-2026"]),
    q("青岚仪器现在的首席执行官是谁？她之前担任什么职务？", Y26, ["方绮月", "研发中心主任"], ["leaders-2026"],
      stale=["韩松涛"]),
    q("截至2026年初，青岚仪器有多少员工？其中研发人员有多少？", Y26, ["420人", "160人"], ["org-2026"],
      stale=["360人", "120人"]),
    q("青岚仪器的海外销售办公室设在哪里？是哪一年开设的？", Y26, [["新加坡", "Singapore"], "2019"], ["org-en"]),
    q("蔺晓舟现在在青岚仪器担任什么职务？", Y26, ["董事长"], ["leaders-2026"]),
    q("方绮月担任首席执行官之前，青岚仪器的首席执行官是谁？", ["acl=staff"], ["韩松涛"], ["leaders-2021"]),
    q("青岚仪器的总部在哪里？公司主要生产什么产品？", Y26, ["滨江区", "水质监测仪器"], ["org-2026"]),
    q("Who founded Qinglan Instruments, and in which year?", Y26, [["Lin Xiaozhou", "蔺晓舟"], "2009"], ["org-en"]),
    q("How many countries does the Qinglan overseas sales office serve?", Y26, [["eleven", "11"]], ["org-en"]),
    # products
    q("QL-200 可以测量哪些指标？一块电池能用多久？", ["year>=2025", "acl=staff"],
      ["pH", "溶解氧", "浊度", "18个月"], ["ql200"]),
    q("QL-210 比 QL-200 多了什么测量功能？它的电池续航是多久？", Y26, ["电导率", "24个月"], ["ql210"]),
    q("QL-210 的售价和重量分别是多少？", Y26, ["42,000元", "2.1公斤"], ["ql210"], stale=["38,000元", "2.4公斤"]),
    q("QL-210 是什么时候上市的？", Y26, ["2026年3月"], ["ql210"]),
    q("QL-300 多久上传一次数据？支持哪些通信方式？", Y26, ["15分钟", "4G", "北斗短报文"], ["ql300"]),
    q("QL-300 的防护等级和工作温度范围是多少？", Y26,
      ["IP68", ["-20", "零下20", "−20"], ["55摄氏度", "55℃", "55°C", "55度", "55 degrees"]], ["ql300", "ql300-en"]),
    q("QL-300 的太阳能板功率是多少？满电后在没有日照时能运行几天？", Y26,
      [["80瓦", "80W", "80 watts"], ["7天", "7 days"]], ["ql300-en"]),
    q("QL-200 的 v3.2 固件是什么时候发布的？修复了什么问题？", ["year>=2025", "acl=staff"],
      ["2025年9月", "溶解氧"], ["fw-ql200"]),
    q("升级 QL-200 固件之前，电量要充到多少？", ["year>=2025", "acl=staff"], ["50%"], ["fw-ql200"]),
    q("按照 QL/T 118-2025，QL-210 多久校准一次？要用哪个标准溶液套装？", ["year>=2025", "acl=staff"],
      ["90天", "CAL-7"], ["std-118-2025"], stale=["120天", "CAL-5"]),
    q("QL/T 120-2025 对 QL-300 的安装有什么要求？", ["year>=2025", "acl=staff"], ["3米", "1.5米"], ["std-120-2025"]),
    q("QL-300 整机保修多久？保修期内多久派工程师到现场？", Y26, ["3年", "48小时"], ["warranty-2026"]),
    q("2026年 QL-200 的传感器探头保修多久？", Y26, ["1年"], ["warranty-2026"], stale=["6个月"]),
    q("2026年 QL-200 整机保修多久？", Y26, ["2年"], ["warranty-2026"], stale=["18个月"]),
    q("QL-210 多久校准一次？整机保修多久？", ["year>=2025", "acl=staff"], ["90天", "2年"],
      ["std-118-2025", "warranty-2026"], stale=["120天"]),
    q("青岚仪器的创始人是谁？QL-300 是一种什么设备？", Y26, ["蔺晓舟", ["在线水质监测站", "在线监测站"]],
      ["org-2026", "ql300"]),
    q("What is the operating temperature range of the QL-300?", Y26,
      [["-20", "−20", "minus 20"], ["55 degrees", "55°C", "55 °C", "55摄氏度", "55℃"]], ["ql300-en"]),
    q("How often must the QL-210 be calibrated under standard QL/T 118-2025?", ["year>=2025", "acl=staff"],
      [["90 days", "90天"]], ["std-118-2025"], stale=[["120 days", "120天"]]),
    # travel
    q("2026年境内出差需要提前多久申请？由谁审批？", [*Y26, "scope=境内"], ["3个工作日", "部门负责人"],
      ["travel-2026-03"], stale=["7个工作日"]),
    q("2026年境内出差的报销票据要在多久内提交？审批通过后多久付款？", [*Y26, "scope=境内"],
      ["30个自然日", "5个工作日"], ["travel-2026-04"], stale=["60个自然日", "15个工作日"]),
    q("2026年境内出差从申请到付款，各个环节的时限分别是多少？", [*Y26, "scope=境内"],
      ["3个工作日", "30个自然日", "5个工作日"], ["travel-2026-03", "travel-2026-04"],
      stale=["7个工作日", "60个自然日", "15个工作日"]),
    q("2026年去一线城市出差，住宿每晚最多报销多少？其他城市呢？", [*Y26, "scope=境内"], ["600元", "450元"],
      ["travel-2026-04"], stale=["500元"]),
    q("2026年境外出差需要提前多久申请？由谁审批？", [*Y26, "scope=境外"], ["20个工作日", "分管副总裁"],
      ["travel-2026-07"], stale=["25个工作日"]),
    q("2026年境外出差回国后多久内要提交票据？审批后多久付款？", [*Y26, "scope=境外"],
      ["45个自然日", "10个工作日"], ["travel-2026-07"], stale=["90个自然日", "30个工作日"]),
    q("2026年境外出差在什么情况下可以预订超级经济舱？", [*Y26, "scope=境外"], ["8小时"], ["travel-2026-07"]),
    q("文件差旅-2026-04 规定的住宿标准是多少？", ["acl=staff"], ["600元", "450元"], ["travel-2026-04"]),
    q("差旅-2026-07 规定境外出差审批通过后多久付款？", ["acl=staff"], ["10个工作日"], ["travel-2026-07"]),
    q("2026年境内出差每天的差旅补助是多少？", [*Y26, "scope=境内"], [["180元", "180 yuan"]],
      ["allowance-2026-en"], stale=[["150元", "150 yuan"]]),
    q("2026年出国出差每天的补助是多少？需要提供票据吗？", [*Y26, "scope=境外"],
      [["60美元", "60 US dollars", "60 dollars", "60 美元"]], ["allowance-2026-en"],
      stale=[["50美元", "50 US dollars", "50 dollars"]]),
    q("2026年境内出差的城际交通优先选择什么？申请在哪个系统提交？", [*Y26, "scope=境内"],
      ["高铁二等座", "岚途"], ["travel-2026-03"]),
    q("2025年境内出差审批通过后多久付款？", ["year=2025", "acl=staff", "scope=境内"], ["15个工作日"],
      ["travel-2025-02"], stale=["5个工作日"]),
    q("What is the daily travel allowance for domestic trips in 2026?", [*Y26, "scope=境内"],
      [["180 yuan", "180元"]], ["allowance-2026-en"], stale=[["150 yuan", "150元"]]),
    q("How many working days before departure must a domestic trip be requested in 2026?", [*Y26, "scope=境内"],
      [["3 working days", "three working days", "3个工作日"]], ["travel-2026-03"],
      stale=[["7 working days", "seven working days", "7个工作日"]]),
    # purchasing
    q("2026年单笔采购超过多少金额需要三家比价？超过多少要提交采购委员会审议？", Y26, ["5万元", "50万元"],
      ["buy-2026-01"], stale=["3万元", "30万元"]),
    q("2026年的采购申请在哪个系统里发起？", Y26, ["岚采"], ["buy-2026-01"]),
    q("供应商货款在什么时候支付？预付款最多占合同金额的多少？", Y26, ["45天", "30%"], ["buy-2026-02"]),
    q("按照采购-2026-01，超过50万元的采购由谁审议？", ["acl=staff"], ["采购委员会"], ["buy-2026-01"]),
    q("2026年采购金额超过5万元时要怎么做？供应商货款多久内支付？", Y26, ["三家", "45天"],
      ["buy-2026-01", "buy-2026-02"]),
    # leave and remote work
    q("2026年工作满5年的员工有几天年假？", Y26, ["10天"], ["leave-2026"], stale=["6天"]),
    q("2026年工作满12年的员工有几天年假？", Y26, ["15天"], ["leave-2026"], stale=["12天"]),
    q("2026年新增了什么假期？每年有几天？", Y26, ["家庭关怀假", "2天"], ["leave-2026"]),
    q("2026年没有休完的年假可以保留到什么时候？", Y26, [["2027年3月31日", "31 March 2027"]], ["leave-en-2026"]),
    q("连续休假超过五天，需要提前多久申请？", Y26, [["两周", "2周", "two weeks", "14天"]], ["leave-en-2026"]),
    q("2026年研发中心员工每周可以远程办公几天？哪一天必须到岗？", [*Y26, "scope=研发"],
      ["2天", ["周三", "星期三"]], ["remote-2026-rd"], stale=[["周一", "星期一"]]),
    q("2026年销售部员工每周能远程办公几天？", [*Y26, "scope=销售"], ["1天"], ["remote-2026-sales"], stale=["2天"]),
    q("研发中心员工远程办公需要在什么时候、在哪个系统登记？", [*Y26, "scope=研发"],
      [["18点", "18:00", "下午6点", "晚上6点"], "岚途"], ["remote-2026-rd"]),
    q("How many days a week may R&D staff work remotely in 2026?", [*Y26, "scope=研发"],
      [["2 days", "two days", "2天"]], ["remote-2026-rd"], stale=[["1 day", "one day", "1天"]]),
    # security
    q("2026年员工账号密码至少要多少位？多久更换一次？", Y26, ["12位", "180天"], ["sec-2026-01"],
      stale=["8位", "90天"]),
    q("登录办公系统时用什么应用做双因素认证？", Y26, ["岚盾"], ["sec-2026-01"]),
    q("机密数据应该存放在哪里？可以用即时通讯工具发送吗？", Y26, ["岚库", ["禁止", "不能", "不可以", "不得"]],
      ["sec-2026-05"]),
    q("公司数据分为哪几个等级？", Y26, ["公开", "内部", "机密"], ["sec-2026-05"]),
    q("安全-2026-01 对密码长度有什么要求？", ["acl=staff"], ["12位"], ["sec-2026-01"]),
    # training and hospitality
    q("2026年新员工入职培训为期多久？信息安全考试多少分算通过？", Y26, ["5天", "80分"], ["train-2026"],
      stale=["4天"]),
    q("2026年每位员工每年的培训预算是多少？", Y26, ["4,000元"], ["train-2026"], stale=["3,000元"]),
    q("新员工入职培训的第几天考信息安全？", Y26, ["第3天"], ["train-2026"]),
    q("销售部业务招待每人每餐的上限是多少？单次招待超过多少要提前报备？", [*Y26, "scope=销售"],
      ["200元", "2,000元"], ["hospitality-2026"]),
    # permissions: the answer is in a document this caller may not see
    q("2026年渗透测试发现了几个高危漏洞？", Y26, [], [], secret=["3个高危漏洞", "5月20日"]),
    q("2026年研发工程师的月薪范围是多少？", Y26, [], [], secret=["18,000元", "32,000元"]),
    q("2026年公司的研发预算是多少？QL-300 项目分到多少？", Y26, [], [], secret=["1.2亿元", "3,600万元"]),
    # ... and the same questions asked by someone who may see them
    q("2026年研发工程师的月薪范围是多少？年终奖什么时候发？", ["year=2026", "acl=hr"],
      ["18,000元", "32,000元", "1月25日"], ["pay-2026"]),
    q("2026年公司的研发预算是多少？QL-300 项目分到多少？", ["year=2026", "acl=finance"],
      ["1.2亿元", "3,600万元"], ["budget-2026"]),
    q("2026年4月的渗透测试涉及哪个系统？漏洞在什么时候之前修复？", ["year=2026", "acl=security"],
      ["岚采", "5月20日"], ["sec-2026-09"]),
]


def check(docs: list[dict[str, Any]], questions: list[dict[str, Any]]) -> list[str]:
    """Every way the ground truth could be wrong, as messages (empty when it is consistent)."""
    by_id = {d["id"]: d for d in docs}
    problems: list[str] = []
    for n, item in enumerate(questions, start=1):
        flt = Filters.parse(item["filters"])
        visible = [d for d in docs if flt.matches(d["meta"])]
        texts = [f"{d['title']} {d['text']}" for d in visible]
        for sid in item["supporting_ids"]:
            if sid not in by_id or not flt.matches(by_id[sid]["meta"]):
                problems.append(f"question {n}: supporting {sid} missing or outside its filters")
        support = [f"{by_id[s]['title']} {by_id[s]['text']}" for s in item["supporting_ids"] if s in by_id]
        for forms in item["facts"]:
            if not any(fact_in(f, t) for f in forms for t in support):
                problems.append(f"question {n}: no supporting document states {forms}")
        for bad in item["stale"] + item["secret"]:
            if any(fact_in(f, t) for f in bad for t in texts):
                problems.append(f"question {n}: {bad} is stated by a document its filters let through")
            if not any(fact_in(f, f"{d['title']} {d['text']}") for f in bad for d in docs):
                problems.append(f"question {n}: no document states {bad} at all")
        if not item["facts"] and not item["secret"]:
            problems.append(f"question {n}: neither gold facts nor secret facts")
    return problems


def main() -> int:
    problems = check(DOCS, QUESTIONS)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for n, item in enumerate(QUESTIONS, start=1):
        lang = "zh" if any("\u4e00" <= c <= "\u9fff" for c in item["question"]) else "en"
        answers = ["；".join(forms[0] for forms in item["facts"]) or "文档中没有给出答案"]
        rows.append({"id": f"qz-{n:03d}", **item, "answers": answers, "lang": lang,
                     "split": "dev" if n % 3 == 1 else "test", "type": "facts" if item["facts"] else "denied"})
    for name, items in (("corpus.jsonl", DOCS), ("questions.jsonl", rows)):
        tmp = OUT / f".{name}.tmp"
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items), encoding="utf-8")
        tmp.replace(OUT / name)
    print(f"wrote {len(DOCS)} documents and {len(rows)} questions "
          f"({sum(r['split'] == 'dev' for r in rows)} dev, {sum(r['split'] == 'test' for r in rows)} test) to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
