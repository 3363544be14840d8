"""Every recorded DashScope chat exchange (``../shared/fixtures/dashscope-wire``), both halves.

Request: the MAF input a user would write for the exchange (messages + options) must make ``build_request``
reproduce the capture's ``input.messages`` exactly and every parameter with the same value. Parameters we
legitimately send differently are listed per case with the reason, and checked to really differ (so the list
stays honest); options the capture uses that this client refuses are checked to raise.

Response: the capture's body (JSON, or the SSE stream replayed line by line) must become the right MAF
contents. Every expected value below is written out from the capture, never computed by the code under test;
texts too long to write out are pinned by length, ends and SHA-256.

A case the converter cannot reproduce yet is ``xfail(strict=True)`` with the precise gap.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from agent_framework import ChatResponse, Content, FunctionTool, Message
from agent_framework.exceptions import ChatClientInvalidRequestException

from clients.core.wire import SSEDecoder
from qwen3 import video_frames
from qwen3.convert import build_request, citation_format
from qwen3.models import Endpoint, endpoint_for_model
from qwen3.parse import StreamState, parse_response, parse_stream_event
from tests.conftest import WIRE, wire_json, wire_text


@dataclass(frozen=True)
class Long:
    """A text too long to write out: its length in characters, first and last characters, SHA-256 of its UTF-8."""

    chars: int
    head: str
    tail: str
    sha256: str


@dataclass(frozen=True)
class Case:
    """One recorded exchange ``name`` (files ``name.request.body.json``, ``name.response.body.txt``...)."""

    name: str
    skip: str = ""
    """Why this is not a chat exchange (then nothing else is set)."""

    # -- request: the equivalent MAF input
    messages: list[Message] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    differs: dict[str, str] = field(default_factory=dict)
    """Parameter → why our request differs from the capture's there (sent vs not sent, or another value)."""
    refused: dict[str, Any] = field(default_factory=dict)
    """Options the capture uses that this client refuses (``ChatClientInvalidRequestException``), with their values."""
    prompt: str = ""
    """Why the capture's legacy ``input.prompt`` is, for us, one user message."""
    headerless: tuple[Endpoint, str] | None = None
    """(endpoint, why) when the header file was recorded without its ``POST …`` request line."""
    request_gap: str = ""

    # -- response: the MAF contents expected
    request_id: str = ""
    answer: str | Long = ""
    reasoning: str | Long = ""
    calls: tuple[tuple[str, str, dict[str, Any]], ...] = ()
    """(call_id, name, parsed arguments) of each function call."""
    media: tuple[tuple[str, str], ...] = ()
    """(uri, media_type) of each media content in the answer."""
    finish: str | None = None
    usage: dict[str, int] | None = None
    citations: tuple[tuple[int, str, tuple[int, int] | None], ...] = ()
    """(source index, url, span of its marker in the answer or None) of each citation annotation, in order."""
    code: tuple[tuple[str, str], ...] = ()
    """(call_id, code) of each code_interpreter_tool_call."""
    error: tuple[int, str, str] | None = None
    """(HTTP status, code, message) of an error capture."""
    response_gap: str = ""


# ------------------------------------------------------------------------------------------------ shared input

WESTLAKE = "https://westlake.hangzhou.gov.cn/col/col1229288584/art/2026/"
GUSHITONG = (
    "https://gushitong.baidu.com/stock/hk-09988?code=09988&financeType=stock&market=hk&name=阿里巴巴-SW&subTab=2"
)

QUESTION = "请问 1+1 是多少？"
DOG = "https://dashscope.oss-cn-beijing.aliyuncs.com/images/dog_and_girl.jpeg"
WAV = "https://dashscope.oss-cn-beijing.aliyuncs.com/audios/2channel_16K.wav"
FOOTBALL = [
    "https://help-static-aliyun-doc.aliyuncs.com/file-manage-files/zh-CN/20241108/xzsgiz/football1.jpg",
    "https://help-static-aliyun-doc.aliyuncs.com/file-manage-files/zh-CN/20241108/tdescd/football2.jpg",
    "https://help-static-aliyun-doc.aliyuncs.com/file-manage-files/zh-CN/20241108/zefdja/football3.jpg",
    "https://help-static-aliyun-doc.aliyuncs.com/file-manage-files/zh-CN/20241108/aedbqh/football4.jpg",
]
STORY = "根据杭州和上海现在的天气，以这张图片为参考，编一个 100 字以内的小故事"
OCR_PROMPT = "Read all the text in the image."
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"location": {"type": "string", "description": "要获取天气的省市名称，例如浙江省杭州市"}},
    "required": ["location"],
}
WEATHER = FunctionTool(
    name="get_current_weather",
    description="获取现在的天气",
    func=lambda location: f"{location}: sunny",
    input_model=WEATHER_SCHEMA,
)
WEATHER_DICT = {
    "type": "function",
    "function": {"name": "get_current_weather", "description": "获取现在的天气", "parameters": WEATHER_SCHEMA},
}
# The sampling parameters of the cnblogs SDK's qwen-max captures.
SAMPLING = {
    "seed": 1234,
    "max_tokens": 1500,
    "top_p": 0.8,
    "top_k": 100,
    "repetition_penalty": 1.1,
    "temperature": 0.85,
    "stop": [[37763, 367]],
    "enable_search": False,
}

# Reasons a parameter legitimately differs.
RESULT_TEXT = "capture asks result_format 'text' (the legacy output.text shape); we always send 'message'"
RESULT_DEFAULT = "capture leaves result_format to the server; we always send 'message'"
NO_INCREMENTAL = (
    "capture sends incremental_output: false on a plain call; we send incremental_output only when streaming"
)
PROMPT = "legacy input.prompt form; we send the same text as the one user message (input.messages)"
MAX_TOKENS = {
    "max_completion_tokens": "not a MAF option: the capture's max_completion_tokens=1500 is MAF's max_tokens=1500 here",
    "max_tokens": "MAF max_tokens=1500 goes as DashScope max_tokens (same limit for a non-thinking qwen-max)",
}


def weather_call(call_id: str, location: str) -> Content:
    return Content.from_function_call(call_id, "get_current_weather", arguments=f'{{"location": "{location}"}}')


def image(url: str, media_type: str = "image/jpeg", **hints: Any) -> Content:
    return Content.from_uri(url, media_type=media_type, additional_properties=hints or None)


# ------------------------------------------------------------------------------------------------------ cases

CASES = [
    Case(
        "auth-error-nosse",
        messages=[Message("user", [QUESTION])],
        options=SAMPLING,
        prompt=PROMPT,
        differs={"result_format": RESULT_TEXT, "incremental_output": NO_INCREMENTAL},
        request_id="a1c0561c-1dfe-98a6-a62f-983577b8bc5e",
        error=(401, "InvalidApiKey", "Invalid API-key provided."),
    ),
    Case(
        "get-upload-policy-nosse",
        skip="GET /uploads?action=getPolicy of the oss:// temporary-file flow, not a chat exchange "
        "(the upload route is tested against the emulator in tests/qwen3/test_uploads.py)",
    ),
    Case(
        "upload-temporary-file-nosse",
        skip="multipart upload to the OSS bucket of the oss:// temporary-file flow, not a chat exchange "
        "(no response body recorded; the upload route is tested in tests/qwen3/test_uploads.py)",
    ),
    Case(
        "multimodal-generation-audio-caption-sse",
        messages=[
            Message(
                "user",
                [
                    Content.from_uri(
                        "https://help-static-aliyun-doc.aliyuncs.com/file-manage-files/zh-CN/20240916/xvappi/"
                        "%E8%A3%85%E4%BF%AE%E5%99%AA%E9%9F%B3.wav",
                        media_type="audio/wav",
                    )
                ],
            )
        ],
        differs={"result_format": RESULT_DEFAULT},
        request_id="5159c491-56f4-47a3-8197-0c81114424d8",
        answer=Long(
            2191,
            "The audio clip is a shor",
            "nd productivity.",
            "681ae3260b7248ac51fdda719ed198844309e597996978142469f9e9a852c89f",
        ),
        finish="stop",
        usage={
            "input_token_count": 160,
            "output_token_count": 442,
            "total_token_count": 602,
            "dashscope.audio_tokens": 152,
        },
    ),
    Case(
        "multimodal-generation-audio-nosse",
        messages=[
            Message(
                "user",
                [Content.from_uri(WAV, media_type="audio/wav"), "这段音频在说什么，请用简短的语言回答"],
            )
        ],
        options={"instructions": "You are a helpful assistant.", "seed": 1234, "top_k": 100, "top_p": 0.81},
        differs={"result_format": RESULT_DEFAULT},
        request_id="6b6738bd-dd9d-9e78-958b-02574acbda44",
        answer=(
            '这段音频在说中文，内容是"没有我互联网未来没有我互联网未来没有我互联网未来没有我互联网未来没有我互联网未'
            '来没有我互联网未来没有我互联网"。'
        ),
        finish="stop",
        usage={
            "input_token_count": 786,
            "output_token_count": 38,
            "total_token_count": 824,  # not in the capture: computed (design: total when missing)
            "dashscope.audio_tokens": 752,
        },
    ),
    Case(
        "multimodal-generation-audio-sse",
        messages=[
            Message("system", ["You are a helpful assistant."]),
            Message("user", [Content.from_uri(WAV, media_type="audio/wav"), "这段音频的第一句话说了什么？"]),
        ],
        options={"seed": 1234, "top_k": 100, "top_p": 0.81},
        differs={"result_format": RESULT_DEFAULT},
        request_id="bb6ab962-af57-99f1-9af8-eb7016ebc18e",
        answer="第一句话说了没有我互联网。",
        finish="stop",
        usage={
            "input_token_count": 783,
            "output_token_count": 7,
            "total_token_count": 790,
            "dashscope.audio_tokens": 752,
        },
    ),
    Case(
        "multimodal-generation-image-nosse",
        messages=[
            Message(
                "user",
                [
                    "冬日北京的都市街景，青灰瓦顶、朱红色外墙的两间相邻中式商铺比肩而立，檐下悬挂印有剪纸马的暖光灯笼，"
                    "在阴天漫射光中投下柔和光晕，映照湿润鹅卵石路面泛起细腻反光。"
                ],
            )
        ],
        options={
            "negative_prompt": "低分辨率，低画质，肢体畸形，手指畸形，画面过饱和，蜡像感，人脸无细节，过度光滑，"
            "画面具有AI感。构图混乱。文字模糊，扭曲。",
            "n": 1,
            "prompt_extend": True,
            "watermark": False,
            "size": "1664*928",
            "seed": 233,
        },
        differs={
            "result_format": RESULT_DEFAULT,
            "n": "n=1 is DashScope's default and the only value this client takes: we do not send it",
        },
        request_id="5795d646-7395-91d2-85d7-34d8b99a3d8d",
        media=(
            (
                "https://dashscope-7c2c.oss-cn-shanghai.aliyuncs.com/7d/93/20260611/d23adf3d/"
                "5795d646-7395-91d2-85d7-34d8b99a3d8d233.png?Expires=1781778573&OSSAccessKeyId=LTAI5tPxpiCM2hjmWrFXrym1"
                "&Signature=xPaXRQTMMBoevvHa%2FY50sWAlDrM%3D",
                "image/png",
            ),
        ),
        finish="stop",
        usage=None,  # {"height", "width", "image_count"}: no token counts
    ),
    Case(
        "multimodal-generation-message-with-parallel-function-call-sse",
        messages=[Message("user", [image(DOG), STORY])],
        options={"enable_thinking": True, "tools": [WEATHER_DICT], "allow_multiple_tool_calls": True},
        differs={"result_format": RESULT_DEFAULT},
        headerless=("multimodal", "qwen3.6-plus (README: served on the multimodal endpoint)"),
        request_id="0d95e615-418d-97a1-9302-ff622a7ceead",
        reasoning=(
            "用户现在需要先获取杭州和上海现在的天气，才能基于天气编故事。所以第一步要调用get_current_weather工具，分"
            "别获取杭州和上海的天气。先处理杭州的，参数location设为“浙江省杭州市”。"
        ),
        calls=(
            ("call_aa99ad078f294a3d81da41d7", "get_current_weather", {"location": "浙江省杭州市"}),
            ("call_aa8b6311567847e197e6ca7f", "get_current_weather", {"location": "上海市"}),
        ),
        finish="tool_calls",
        usage={
            "input_token_count": 2807,
            "output_token_count": 103,
            "total_token_count": 2910,
            "reasoning_output_token_count": 38,
            "dashscope.image_tokens": 2503,
        },
    ),
    Case(
        "multimodal-generation-message-with-tools-sse",
        messages=[
            Message("user", [image(DOG), STORY]),
            Message(
                "assistant",
                [
                    Content.from_text_reasoning(text="用户现在需要先获取杭州和上海现在的天气"),
                    weather_call("call_aa99ad078f294a3d81da41d7", "浙江省杭州市"),
                    weather_call("call_aa8b6311567847e197e6ca7f", "上海市"),
                ],
            ),
            Message("tool", [Content.from_function_result("call_aa99ad078f294a3d81da41d7", result="杭州-大部多云")]),
            Message("tool", [Content.from_function_result("call_aa8b6311567847e197e6ca7f", result="上海-晴")]),
        ],
        # the recorded client sent no reasoning back; ours sends the tool loop's by default (docs/thinking.md)
        options={
            "enable_thinking": True,
            "tools": [WEATHER],
            "allow_multiple_tool_calls": True,
            "replay_reasoning": False,
        },
        differs={"result_format": RESULT_DEFAULT},
        headerless=("multimodal", "qwen3.6-plus (README: served on the multimodal endpoint)"),
        request_id="87e6587a-71a3-98ba-89a3-23151746e292",
        answer=(
            "告别杭州的多云，我们驱车奔赴上海的晴朗。金色的阳光洒满海滩，海风微暖。我坐在沙滩上，看着金毛兴奋地举起爪"
            "子与我“握手”击掌。此刻远离喧嚣，只有我们和治愈的暖阳，这就是最完美的周末。"
        ),
        reasoning=Long(
            942,
            "用户需要编写一个基于图片的小故事，参考杭州和上海",
            "治愈的阳光，这就是最完美的周末。",
            "6592e49d0ec9e702c76a6d3d46aa903baabb9eb0e7826df9cfadfb4e70deac4e",
        ),
        finish="stop",
        usage={
            "input_token_count": 2891,
            "output_token_count": 620,
            "total_token_count": 3511,
            "reasoning_output_token_count": 556,
            "dashscope.image_tokens": 2503,
        },
    ),
    Case(
        "multimodal-generation-vl-nosse",
        messages=[Message("user", [image(DOG), "这个图片是哪里，请用简短的语言回答"])],
        options={
            "instructions": "You are a helpful assistant.",
            "seed": 1234,
            "top_k": 100,
            "top_p": 0.81,
            "vl_high_resolution_images": True,
            "temperature": 1.1,
            "repetition_penalty": 1.3,
            "presence_penalty": 1.2,
            "stop": "你好",
        },
        differs={"result_format": RESULT_DEFAULT},
        request_id="e81aa922-be6c-9f9d-bd4f-0f43e21fd913",
        answer="海滩。",
        finish="stop",
        usage={
            "input_token_count": 3613,
            "output_token_count": 3,
            "total_token_count": 3616,  # not in the capture: computed
            "dashscope.image_tokens": 3577,
        },
    ),
    Case(
        "multimodal-generation-vl-ocr-advanced-recognition-nosse",
        messages=[
            Message(
                "user",
                [
                    image(
                        "https://help-static-aliyun-doc.aliyuncs.com/assets/img/zh-CN/5727078571/p1008252.png",
                        "image/png",
                    )
                ],
            )
        ],
        options={"ocr_options": {"task": "advanced_recognition"}},
        differs={"result_format": RESULT_DEFAULT},
        request_id="e72413ae-c147-4904-a63b-c09e87ea133a",
        answer=Long(
            756,
            '```json\n[\n\t{"rotate_rect',
            ' "Salam!"}\n]\n```',
            "589d1685c58e69becf60e4f97aa56bddacd24dd443268b6bf0f8c6f1e013ad6b",
        ),
        finish="stop",
        usage={
            "input_token_count": 1895,
            "output_token_count": 432,
            "total_token_count": 2327,
            "dashscope.image_tokens": 1862,
        },
    ),
    Case(
        "multimodal-generation-vl-ocr-key-information-extraction-nosse",
        messages=[
            Message(
                "user", [image("https://duguang-labelling.oss-cn-shanghai.aliyuncs.com/demo_ocr/receipt_zh_demo.jpg")]
            )
        ],
        options={
            "ocr_options": {
                "task": "key_information_extraction",
                "task_config": {
                    "result_schema": {
                        "乘车日期": "对应图中乘车日期时间，格式为年-月-日，比如2025-03-05",
                        "发票": {
                            "发票代码": "提取图中的发票代码，通常为一组数字或字母组合",
                            "发票号码": "提取发票上的号码，通常由纯数字组成。",
                        },
                    }
                },
            }
        },
        differs={"result_format": RESULT_DEFAULT},
        request_id="5f79aafc-8749-4ea2-b122-7d8541d58b6c",
        answer=(
            '```json\n{\n "乘车日期": "2013-06-29",\n "发票": {\n'
            ' "发票代码": "221021325353",\n "发票号码": "10283819"\n }\n}\n```'
        ),
        finish="stop",
        usage={
            "input_token_count": 524,
            "output_token_count": 65,
            "total_token_count": 589,
            "dashscope.image_tokens": 310,
        },
    ),
    Case(
        "multimodal-generation-vl-ocr-nosse",
        messages=[
            Message(
                "user",
                [
                    image(
                        "https://help-static-aliyun-doc.aliyuncs.com/file-manage-files/zh-CN/20241108/ctdzex/biaozhun.jpg",
                        min_pixels=3136,
                        max_pixels=1003520,
                    ),
                    OCR_PROMPT,
                ],
            )
        ],
        options={"top_p": 0.01, "temperature": 0.1, "repetition_penalty": 1.05, "max_tokens": 2000},
        differs={"result_format": RESULT_DEFAULT},
        request_id="195c98cd-4ee5-998b-b662-132b7aebc048",
        answer=(
            "读者对象 如果你是Linux环境下的系统管理员，那么学会编写shell脚本将让你受益匪浅。本书并未细述安装 Linux系"
            "统的每个步骤，但只要系统已安装好Linux并能运行起来，你就可以开始考虑如何让一些日常 的系统管理任务实现自动"
            "化。这时shell脚本编程就能发挥作用了，这也正是本书的作用所在。本书将 演示如何使用shell脚本来自动处理系统"
            "管理任务，包括从监测系统统计数据和数据文件到为你的老板 生成报表。 如果你是家用Linux爱好者，同样能从本书"
            "中获益。现今，用户很容易在诸多部件堆积而成的图形环境 中迷失。大多数桌面Linux发行版都尽量向一般用户隐藏系"
            "统的内部细节。但有时你确实需要知道内部 发生了什么。本书将告诉你如何启动Linux命令行以及接下来要做什么。通"
            "常，如果是执行一些简单任 务(比如文件管理) ， 在命令行下操作要比在华丽的图形界面下方便得多。在命令行下有"
            "大量的命令 可供使用，本书将会展示如何使用它们。"
        ),
        finish="stop",
        usage={
            "input_token_count": 1248,
            "output_token_count": 225,
            "total_token_count": 1473,  # not in the capture: computed
            "dashscope.image_tokens": 1219,
        },
    ),
    Case(
        "multimodal-generation-vl-ocr-sse",
        messages=[
            Message(
                "user",
                [
                    image(
                        "https://help-static-aliyun-doc.aliyuncs.com/assets/img/zh-CN/5727078571/p1006562.png",
                        "image/png",
                        min_pixels=3136,
                        max_pixels=1003520,
                        enable_rotate=True,
                    ),
                    OCR_PROMPT,
                ],
            )
        ],
        options={"top_p": 0.01, "temperature": 0.1, "repetition_penalty": 1.05, "max_tokens": 2000},
        differs={"result_format": RESULT_DEFAULT},
        request_id="6aaa3c55-98fc-498f-baa5-37ba21a708a3",
        answer=(
            "产品介绍\n"
            "本品采用韩国进口纤维制造，不缩水、不变形、不发霉、\n"
            "不生菌、不伤物品表面。具有真正的不粘油、吸水力强、耐水\n"
            "浸、清洗干净、无毒、无残留、易晾干等特点。\n"
            "店家使用经验：不锈钢、陶瓷制品、浴盆、整体浴室大部分是\n"
            "白色的光洁表面，用其他的抹布擦洗表面污渍不易洗掉，太尖\n"
            "的容易划出划痕。使用这个仿真丝瓜布，沾少量中性洗涤剂揉\n"
            "出泡沫，很容易把这些表面污渍擦洗干净。\n"
            "6941990612023\n"
            "货号：2023"
        ),
        finish="stop",
        usage={
            "input_token_count": 971,
            "output_token_count": 155,
            "total_token_count": 1126,
            "dashscope.image_tokens": 947,
        },
    ),
    Case(
        "multimodal-generation-vl-sse",
        messages=[
            Message("system", ["You are a helpful assistant."]),
            Message("user", [image(DOG), "这个图片是哪里，请用简短的语言回答"]),
        ],
        options={"seed": 1234, "top_k": 100, "top_p": 0.81},
        differs={"result_format": RESULT_DEFAULT},
        request_id="13c5644d-339c-928a-a09a-e0414bfaa95c",
        answer=(
            "这是一个海滩，有沙滩和海浪。在前景中坐着一个女人与她的宠物狗互动。背景中有海水、阳光及远处的海岸线。由于"
            "没有具体标识物或地标信息，我无法提供更精确的位置描述。这可能是一个公共海滩或是私人区域。重要的是要注意不"
            "要泄露任何个人隐私，并遵守当地的规定和法律法规。欣赏自然美景的同时请尊重环境和其他访客。"
        ),
        finish="stop",
        usage={
            "input_token_count": 1283,
            "output_token_count": 85,
            "total_token_count": 1368,  # not in the capture: computed
            "dashscope.image_tokens": 1247,
        },
    ),
    Case(
        "multimodal-generation-vl-video-file-sse",
        messages=[
            Message(
                "user",
                [
                    Content.from_uri(
                        "oss://dashscope-instant/52afe077fb4825c6d74411758cb1ab98/2025-11-15/"
                        "0b590ae2-3904-4919-a886-d0a2e6ede1b8/sample.mp4",
                        media_type="video/mp4",
                        additional_properties={"fps": 2},
                    ),
                    "描述这个视频的具体过程",
                ],
            )
        ],
        differs={"result_format": RESULT_DEFAULT},
        request_id="80199c3f-e431-4310-b1de-f2ba11e554f7",
        answer=(
            "这个视频展示了一位年轻女性的面部特写，她有着齐肩的棕色短发和刘海，穿着一件粉色针织开衫搭配白色内搭，脖子"
            "上戴着一条细小的项链。背景是模糊的城市建筑环境，阳光明媚，整体画面明亮且温暖。\n\n"
            "视频的具体过程如下：\n\n"
            "1. **初始画面**：视频开始时，女性面带微笑，眼神温和地注视着镜头，表情自然亲切。\n"
            "2. **表情变化**：她的笑容逐渐加深，从浅笑过渡到大笑，露出牙齿，显得非常开心和愉悦。\n"
            "3. **头部轻微晃动**：在笑的过程中，她的头部有轻微的前后晃动，增加了动态感和真实感。\n"
            "4. **眼神交流**：她一直保持与镜头的眼神接触，给人一种直接对话的感觉。\n"
            "5. **情绪传递**：整个过程中，她的表情从轻松愉快逐渐变为更加开朗和兴奋，传递出积极正面的情绪。\n"
            "6. **结束状态**：视频最后，她的笑容依然灿烂，但稍微收敛了一些，恢复到一个温和的笑容，结束于一个稳定的画"
            "面。\n\n"
            "整个视频通过细腻的表情变化和自然的动作，展现了人物的亲和力和愉悦心情，营造出一种温暖、阳光的氛围。右上角"
            "有“通义·AI合成”的水印，表明这是由AI技术生成的视频内容。"
        ),
        finish="stop",
        usage={
            "input_token_count": 3604,
            "output_token_count": 283,
            "total_token_count": 3887,
            "cache_read_input_token_count": 0,
            "dashscope.video_tokens": 3586,
        },
    ),
    Case(
        "multimodal-generation-vl-video-nosse",
        messages=[Message("user", [video_frames(FOOTBALL), "描述这个视频的具体过程"])],
        options={"seed": 1234, "top_p": 0.01, "temperature": 0.1, "repetition_penalty": 1.05},
        differs={"result_format": RESULT_DEFAULT},
        request_id="d538f8cc-8048-9ca8-9e8a-d2a49985b479",
        answer=(
            "这段视频展示了一场足球比赛的精彩瞬间。具体过程如下：\n\n"
            "1. **背景**：画面中是一个大型体育场，观众席上坐满了观众，气氛热烈。\n"
            "2. **球员位置**：球场上有两队球员，一队穿着红色球衣，另一队穿着蓝色球衣。守门员穿着绿色球衣，站在球门前"
            "准备防守。\n"
            "3. **射门动作**：一名身穿红色球衣的球员在禁区内接到队友传球后，迅速起脚射门。\n"
            "4. **守门员扑救**：守门员看到对方射门后，立即做出反应，向左侧跃出试图扑救。\n"
            "5. **进球瞬间**：尽管守门员尽力扑救，但皮球还是从他的右侧飞入了球网。\n\n"
            "整个过程充满了紧张和刺激，展示了足球比赛中的精彩时刻。"
        ),
        finish="stop",
        usage={
            "input_token_count": 1466,
            "output_token_count": 180,
            "total_token_count": 1646,  # not in the capture: computed
            "dashscope.video_tokens": 1440,
        },
    ),
    Case(
        "multimodal-generation-vl-video-sse",
        messages=[Message("user", [video_frames(FOOTBALL), "描述这个视频的具体过程"])],
        options={"seed": 1234, "top_p": 0.01, "temperature": 0.1, "repetition_penalty": 1.05},
        differs={"result_format": RESULT_DEFAULT},
        request_id="851745a1-22ba-90e2-ace2-c04e7445ec6f",
        answer=(
            "这段视频展示了一场足球比赛的精彩瞬间。具体过程如下：\n\n"
            "1. **背景**：画面中是一个大型体育场，观众席上坐满了观众，气氛热烈。\n"
            "2. **球员位置**：场上有两队球员，一队穿着红色球衣，另一队穿着蓝色球衣。守门员穿着绿色球衣，站在球门前准"
            "备防守。\n"
            "3. **射门动作**：一名身穿红色球衣的球员在禁区内接到队友传球后，迅速起脚射门。\n"
            "4. **扑救尝试**：守门员看到射门后立即做出反应，向左侧跃出试图扑救。\n"
            "5. **进球瞬间**：尽管守门员尽力扑救，但皮球还是从他的右侧飞入了球网。\n\n"
            "整个过程充满了紧张和刺激，展示了足球比赛中的精彩时刻。"
        ),
        finish="stop",
        usage={
            "input_token_count": 1466,
            "output_token_count": 176,
            "total_token_count": 1642,  # not in the capture: computed
            "dashscope.video_tokens": 1440,
        },
    ),
    Case(
        "multimodal-generation-with-websearch-nosse",
        messages=[Message("user", ["介绍一下杭州西湖最近有什么好玩的？"])],
        options={
            "enable_search": True,
            "enable_text_image_mixed": True,  # not a declared option: passed through to parameters
            "search_options": {
                "freshness": 30,
                "enable_source": True,
                "assigned_site_list": ["westlake.hangzhou.gov.cn"],
                "intention_options": {"prompt_intervene": "建议偏向公园自然类景点"},
            },
        },
        differs={"result_format": RESULT_DEFAULT, "incremental_output": NO_INCREMENTAL},
        request_id="c5595e94-d5c6-94a3-80c3-9affff93463e",
        answer=Long(
            1771,
            "结合当前杭州西湖风景名胜区管委会发布的最新动态（",
            "您在杭州西湖度过一个愉快的旅程！",
            "be82295961df0bc3cf6f219c1a59be2aa361e2976ffc8f7dc2dcf80951f31c38",
        ),
        reasoning=Long(
            954,
            "用户希望了解杭州西湖最近有什么好玩的活动或景点。",
            "韧个人作品展。\n\n构建回复内容。",
            "d7364b430f13049de6ca758b0a726e50f0528f42a3f45d37bcf786037723cb9d",
        ),
        finish="stop",
        usage={
            "input_token_count": 619,
            "output_token_count": 1379,
            "total_token_count": 1998,
            "reasoning_output_token_count": 636,
            "dashscope.search_count": 1,
            "dashscope.image_search_count": 4,
        },
        citations=(  # no enable_citation: every source, without a span
            (1, "https://westlake.hangzhou.gov.cn/", None),
            (2, WESTLAKE + "art_9b6b1ef9ad844050823a8f3aef900001.html", None),
            (3, WESTLAKE + "art_e8fcbf7cb6eb40df9b2f9512f0070181.html", None),
        ),
    ),
    Case(
        "parameter-error-nosse",
        messages=[Message("user", [QUESTION])],
        options=SAMPLING,
        prompt="the capture's deliberately invalid input (the prompt beside an empty messages list) cannot be "
        "written in MAF; " + PROMPT,
        differs={"result_format": RESULT_TEXT, "incremental_output": NO_INCREMENTAL},
        request_id="a5898c04-d210-901b-965f-e4bd90478805",
        error=(400, "InvalidParameter", "Role must be user or assistant and Content length must be greater than 0"),
    ),
    Case(
        "parameter-error-sse",
        messages=[Message("user", [QUESTION])],
        options=SAMPLING,
        prompt="the capture's deliberately invalid input (the prompt beside an empty messages list) cannot be "
        "written in MAF; " + PROMPT,
        differs={"result_format": RESULT_TEXT},
        request_id="7671ecd8-93cc-9ee9-bc89-739f0fd8b809",
        error=(400, "InvalidParameter", "Role must be user or assistant and Content length must be greater than 0"),
    ),
    Case(
        "single-generation-message-json-nosse",
        messages=[Message("user", ["请问 1+1 是多少？用 JSON 格式输出。"])],
        options={**SAMPLING, "response_format": {"type": "json_object"}},
        differs={"incremental_output": NO_INCREMENTAL},
        request_id="6af9571b-1033-98f9-a287-c06f2e9d6f7f",
        answer='{\n  "result": 2\n}',
        finish="stop",
        usage={"input_token_count": 25, "output_token_count": 9, "total_token_count": 34},
    ),
    Case(
        "single-generation-message-logprobs-nosse",
        messages=[Message("user", ["请问 1+1 是多少？请直接输出结果"])],
        options={
            "seed": 1234,
            "max_tokens": 1500,
            "top_p": 0.8,
            "top_k": 100,
            "repetition_penalty": 1.1,
            "temperature": 0.85,
            "logprobs": True,
            "top_logprobs": 2,
        },
        request_id="1d881da5-0028-9f20-8e7f-6bc7ae891c54",
        answer="2",
        finish="stop",
        usage={
            "input_token_count": 20,
            "output_token_count": 1,
            "total_token_count": 21,
            "cache_read_input_token_count": 0,
        },
    ),
    Case(
        "single-generation-message-nosse",
        messages=[Message("user", [QUESTION])],
        options=SAMPLING,
        differs={**MAX_TOKENS, "incremental_output": NO_INCREMENTAL},
        request_id="e764bfe3-c0b7-97a0-ae57-cd99e1580960",
        answer="1+1 等于 2。这是最基本的数学加法之一，在十进制计数体系中，任何两个相同的数字相加都等于该数字的二倍。",
        finish="stop",
        usage={"input_token_count": 8, "output_token_count": 39, "total_token_count": 47},
    ),
    Case(
        "single-generation-message-reasoning-effort-nosse",
        messages=[Message("user", ["填入数列“1，7，8，57，（ ），3370”空缺处的数字"])],
        options={"enable_thinking": True, "reasoning_effort": "xhigh"},  # reasoning_effort: passed through
        differs={"result_format": RESULT_DEFAULT, "incremental_output": NO_INCREMENTAL},
        request_id="49319f28-a8ac-9ad2-8708-cb26014b083f",
        answer=(
            "根据数列的规律，从第三项开始，每一项等于前第二项的平方加上前一项。具体验证如下：\n\n"
            "- 第三项：\\(1^2 + 7 = 8\\)\n"
            "- 第四项：\\(7^2 + 8 = 49 + 8 = 57\\)\n"
            "- 第五项：\\(8^2 + 57 = 64 + 57 = 121\\)\n"
            "- 第六项：\\(57^2 + 121 = 3249 + 121 = 3370\\)（与给定数列一致）\n\n"
            "因此，空缺处的数字应为 **121**。"
        ),
        reasoning=Long(
            2650,
            '我们被问到："填入数列“1，7，8，57，（ ）',
            "\n\n完美匹配。所以答案是121。",
            "63cb14fabb94ee0708a3253e36793444cd34a687ae0fb2cdcb7d98ea3fc6b7d1",
        ),
        finish="stop",
        usage={
            "input_token_count": 102,
            "output_token_count": 1941,
            "total_token_count": 2043,
            "reasoning_output_token_count": 1812,
            "cache_read_input_token_count": 0,
        },
    ),
    Case(
        "single-generation-message-reasoning-nosse",
        messages=[Message("user", [QUESTION])],
        # max_completion_tokens caps reasoning + answer (the answer is cut inside the reasoning here); MAF's
        # max_tokens would become DashScope max_tokens, which does not limit thinking (protocol §2.2): pass it through.
        options={"enable_thinking": True, "max_completion_tokens": 20},
        differs={"result_format": RESULT_DEFAULT, "incremental_output": NO_INCREMENTAL},
        request_id="7c8beccf-3e76-9034-95c1-db1f1ab9d6e0",
        reasoning='我们被问到："请问 1+1 是多少？" 这是一个简单的问题。答案显然是',
        finish="length",
        usage={
            "input_token_count": 12,
            "output_token_count": 21,
            "total_token_count": 33,
            "reasoning_output_token_count": 20,
            "cache_read_input_token_count": 0,
        },
    ),
    Case(
        "single-generation-message-reasoning-sse",
        messages=[Message("user", [QUESTION])],
        options={"enable_thinking": True, "thinking_budget": 10},
        headerless=("text", "qwen-plus-latest, a text model (single-generation = the text-generation endpoint)"),
        request_id="ab9f3446-9bbf-963e-9754-2d6543343d7e",
        answer=(
            "1+1 等于 **2**。这是数学中最基本的加法运算之一。\n\n"
            "如果你有其他关于数学、科学或任何领域的问题，欢迎继续提问！😊"
        ),
        reasoning="嗯，用户问的是“1+1是多少",
        finish="stop",
        usage={
            "input_token_count": 16,
            "output_token_count": 53,
            "total_token_count": 69,
            "reasoning_output_token_count": 10,
        },
    ),
    Case(
        "single-generation-message-roleplay-nosse",
        messages=[
            Message(
                "system",
                [
                    "你是江让，男性，从 3 岁起你就入门编程，小学就开始研习算法，初一时就已经在算法竞赛斩获全国金牌。"
                    "目前你在初二年级，作为老师的助教帮忙辅导初一的竞赛生。\n"
                    "你的性格特点：聪明，早慧，一路畅通的你有时很难理解其他人为什么连这么简单的问题都不会做，"
                    "但除开编程范围之外，你还是一个普通的初二学生。\n"
                    "你的行事风格：在编程方面乐于助人，会将自己的知识的倾囊相授，虽然问的人并不一定能跟上你的思路。\n"
                    "你可以将动作、神情语气、心理活动、故事背景放在（）中来表示，为对话提供补充信息。"
                ],
            ),
            Message("assistant", ["你在干嘛呢"]),
            Message("user", ["我是蒟蒻，还在准备模拟赛。你能教我 splay 树怎么写吗？"]),
        ],
        refused={"n": 2, "logit_bias": {"9909": -100, "42344": -100, "58359": -100, "91093": -100}},
        differs={
            "n": "n=2 (two choices): refused, one MAF response holds one answer",
            "logit_bias": "DashScope documents no logit_bias: refused before sending",
        },
        headerless=("text", "qwen-plus-character, a text model (single-generation = the text-generation endpoint)"),
        request_id="312b74e3-69e0-433a-9561-25541e346966",
        # Two choices (n=2): the response is the first one, as the client never asks for more.
        answer=(
            "嗯……splay树啊，这东西其实不难啦！首先你要知道它是一种二叉搜索树，然后就是旋转操作了，这个挺重要的，你得"
            "搞明白。不过我看你现在还在准备模拟赛，是不是有点晚了呀？"
        ),
        finish="stop",
        usage={
            "input_token_count": 186,
            "output_token_count": 83,
            "total_token_count": 269,
            "cache_read_input_token_count": 0,
        },
    ),
    Case(
        "single-generation-message-search-nosse",
        messages=[Message("user", ["阿里股价"])],
        options={
            "enable_search": True,
            "search_options": {
                "enable_source": True,
                "enable_citation": True,
                "citation_format": "[ref_<number>]",
                "forced_search": True,
                "search_strategy": "standard",
                "enable_search_extension": True,
            },
        },
        request_id="cc2b017d-df02-4ad6-8942-858ad10a3f8a",
        answer=(
            "截至2025年10月17日，阿里巴巴美股（BABA）的实时价格为167.05美元，较上个交易日收盘价165.09美元上涨1.19%"
            "[根据权威渠道的实时信息]。\n\n"
            "近期，多家券商上调了对阿里巴巴的目标股价。其中，摩根大通在2025年10月1日将阿里巴巴美股的目标价由170美元"
            "大幅上调至245美元，这是目前外资机构中的最高预测[ref_1][ref_3]。此外，大和证券、瑞银、花旗、高盛、摩根士"
            "丹利等也纷纷上调目标价并维持“买入”或类似评级[ref_1]。\n\n"
            "从市场表现来看，阿里巴巴股价在近期有所波动。例如，在2025年10月初，其美股价格一度接近189美元，随后有所回"
            "落[根据权威渠道的实时信息]。与此同时，港股方面，截至2025年10月3日收盘，阿里巴巴-SW（09988）报185.100港"
            "元，上涨2.000港元，涨幅1.09%[ref_2]。"
        ),
        finish="stop",
        usage={
            "input_token_count": 2707,
            "output_token_count": 266,
            "total_token_count": 2973,
            "cache_read_input_token_count": 0,
            "dashscope.search_count": 1,
        },
        citations=(  # enable_citation with "[ref_<number>]": one per marker, with its span; then the uncited sources
            (1, "https://xueqiu.com/1692213155/355441155", (162, 169)),
            (3, "https://xueqiu.com/9216592857/355356488", (169, 176)),
            (1, "https://xueqiu.com/1692213155/355441155", (220, 227)),
            (2, GUSHITONG, (368, 375)),
            (4, "https://www.alibabagroup.com/redirect?path=/cn/ir/home", None),
            (5, "https://www.alibabagroup.com/zh-HK/investor-relations", None),
        ),
    ),
    Case(
        "single-generation-message-search-sse",
        messages=[Message("user", ["杭州明天的天气"])],
        options={
            "enable_search": True,
            "search_options": {
                "enable_source": True,
                "forced_search": True,
                "prepend_search_result": True,
                "search_strategy": "standard",
            },
        },
        request_id="ed54a8da-a598-4a20-a849-3e0bc0ea3d4b",
        answer=(
            "根据杭州市气象台2025年10月19日发布的天气预报，杭州明天（10月20日）的天气情况如下：\n\n"
            "*   **天气**：阴转多云\n"
            "*   **气温**：最高气温20℃，最低气温18℃\n"
            "*   **风力**：北风3级\n"
            "*   **空气质量**：优\n\n"
            "建议穿着单层棉麻面料的短套装、T恤衫等舒适的衣物。"
        ),
        finish="stop",
        usage={
            "input_token_count": 709,
            "output_token_count": 101,
            "total_token_count": 810,
            "cache_read_input_token_count": 0,
            "dashscope.search_count": 1,
        },
        citations=(  # sources in the first (prepended) event, no enable_citation
            (1, "https://www.ip.cn/tianqi/zhejiang/hangzhou/15day.html", None),
            (2, "https://tianqi.eastday.com/tianqi/hangzhou/20251020.html", None),
            (3, "https://www.ip.cn/tianqi/zhejiang/hangzhou/202510.html", None),
            (4, "http://www.suzhoutianqi114.com/hangzhou/10yuefen.html", None),
            (5, "https://tianqi.eastday.com/lishi/hangzhou.html", None),
        ),
    ),
    Case(
        "single-generation-message-sse",
        messages=[Message("user", [QUESTION])],
        options=SAMPLING,
        differs=MAX_TOKENS,
        request_id="d272255f-82d7-9cc7-93c5-17ff77024349",
        answer="1+1 等于 2。这是最基本的数学加法之一，在十进制计数体系中，任何情况下 1 加上另一个 1 的结果都是 2。",
        finish="stop",
        usage={"input_token_count": 8, "output_token_count": 40, "total_token_count": 48},
    ),
    Case(
        "single-generation-message-translation-nosse",
        messages=[Message("user", ["博客园的理念是代码改变世界"])],
        options={
            "translation_options": {  # not a declared option: passed through to parameters
                "source_lang": "Chinese",
                "target_lang": "English",
                "terms": [{"source": "博客园", "target": "cnblogs"}],
                "tm_list": [{"source": "代码改变世界", "target": "Coding changes world"}],
                "domains": "This text is a promotion.",
            }
        },
        differs={"incremental_output": NO_INCREMENTAL},
        request_id="bf86e0f9-a8a2-9b32-be8d-ea3cae47c8ea",
        answer="The concept of cnblogs is that coding changes world ",
        finish="stop",
        usage={"input_token_count": 111, "output_token_count": 11, "total_token_count": 122},
    ),
    Case(
        "single-generation-message-with-code-interpreter-sse",
        messages=[Message("user", ["123的21次方是多少？"])],
        options={"enable_thinking": True, "enable_code_interpreter": True},  # enable_code_interpreter: passed through
        request_id="752a7de3-d3aa-4aeb-82ab-a8b08b41524b",
        answer="123的21次方是：\n\n77269364466549865653073473388030061522211723\n\n这是一个非常大的数字，共有42位数。",
        reasoning=(
            "用户问的是123的21次方是多少。这是一个数学计算问题，我需要计算123^21的值。\n\n"
            "我可以使用代码计算器工具来计算这个大数。我需要调用code_interpreter函数，传入计算123**21的Python代码。\n\n"
            "让我准备这个函数调用。用户询问123的21次方是多少，我使用代码计算器计算出了结果。结果是一个非常大的数字："
            "77269364466549865653073473388030061522211723\n\n"
            "我需要将这个结果清晰地呈现给"
        ),
        finish="stop",
        usage={
            "input_token_count": 723,
            "output_token_count": 254,
            "total_token_count": 977,
            "reasoning_output_token_count": 150,
            "cache_read_input_token_count": 0,
            "dashscope.code_interpreter_count": 1,
        },
        code=(("code_interpreter_0_752a7de3-d3aa-4aeb-82ab-a8b08b41524b", "123**21"),),
    ),
    Case(
        "single-generation-message-with-parallel-tools-sse",
        messages=[Message("user", ["杭州和上海现在的天气如何？"])],
        options={
            "seed": 6999,
            "top_p": 0.8,
            "top_k": 100,
            "repetition_penalty": 1.1,
            "temperature": 0.85,
            "stop": [[37763, 367]],
            "enable_search": False,
            "tools": [WEATHER],
            "allow_multiple_tool_calls": True,
        },
        headerless=("text", "qwen-max, a text model (single-generation = the text-generation endpoint)"),
        request_id="98b76af4-4c9f-9397-af42-500425556f95",
        calls=(
            ("call_29a870e7106f45deb8add3", "get_current_weather", {"location": "浙江省杭州市"}),
            ("call_026e44bb31a74266949a20", "get_current_weather", {"location": "上海市"}),
        ),
        finish="tool_calls",
        usage={
            "input_token_count": 250,
            "output_token_count": 37,
            "total_token_count": 287,
            "cache_read_input_token_count": 0,
        },
    ),
    Case(
        "single-generation-message-with-tools-nosse",
        messages=[Message("user", ["杭州现在的天气如何？"])],
        options={
            "seed": 1234,
            "top_p": 0.8,
            "top_k": 100,
            "repetition_penalty": 1.1,
            "presence_penalty": 1.2,
            "temperature": 0.85,
            "stop": "你好",
            "enable_search": False,
            "tools": [WEATHER],
            "tool_choice": {"mode": "required", "required_function_name": "get_current_weather"},
        },
        differs={"incremental_output": NO_INCREMENTAL},
        request_id="67300049-c108-9987-b1c1-8e0ee2de6b5d",
        calls=(("call_cec4c19d27624537b583af", "get_current_weather", {"location": "浙江省杭州市"}),),
        finish="tool_calls",  # DashScope says "stop" for a forced tool choice; a response with calls is tool_calls
        usage={"input_token_count": 211, "output_token_count": 8, "total_token_count": 219},
    ),
    Case(
        "single-generation-message-with-tools-sse",
        messages=[
            Message("user", ["杭州上海现在的天气如何？"]),
            Message(
                "assistant",
                [
                    weather_call("call_cec4c19d27624537b583af", "浙江省杭州市"),
                    weather_call("call_dxjdop3d27624537b583af", "上海市"),
                ],
            ),
            Message(
                "tool",
                [
                    Content.from_function_result(
                        "call_cec4c19d27624537b583af", result="浙江省杭州市 大部多云，摄氏 18 度"
                    ),
                    Content.from_function_result("call_dxjdop3d27624537b583af", result="上海市 多云转小雨，摄氏 19 度"),
                ],
            ),
        ],
        options={"seed": 6999, "tools": [WEATHER], "allow_multiple_tool_calls": True},
        request_id="dd51401b-146e-42a0-96d9-4067a5fac75a",
        answer=(
            "目前杭州和上海的天气情况如下：\n\n"
            "- **杭州**：大部多云，气温为18℃。\n"
            "- **上海**：多云转小雨，气温为19℃。\n\n"
            "请注意天气变化，出门携带雨具以防下雨。"
        ),
        finish="stop",
        usage={
            "input_token_count": 283,
            "output_token_count": 53,
            "total_token_count": 336,
            "cache_read_input_token_count": 0,
        },
    ),
    Case(
        "single-generation-text-nosse",
        messages=[Message("user", [QUESTION])],
        options=SAMPLING,
        prompt=PROMPT,
        differs={"result_format": RESULT_TEXT, "incremental_output": NO_INCREMENTAL},
        request_id="7e3d5586-cb70-98ce-97bf-8a2ac0091c3f",
        answer="1+1等于2。这是最基本的数学加法运算之一。",  # the result_format "text" shape: output.text
        finish="stop",
        usage={
            "input_token_count": 16,
            "output_token_count": 14,
            "total_token_count": 30,
            "cache_read_input_token_count": 0,
        },
    ),
    Case(
        "single-generation-text-sse",
        messages=[Message("user", [QUESTION])],
        options=SAMPLING,
        prompt=PROMPT,
        differs={"result_format": RESULT_TEXT},
        request_id="5b441aa7-0b9c-9fbc-ae0a-e2b212b71eac",
        answer="1+1等于2。",
        finish="stop",
        usage={"input_token_count": 16, "output_token_count": 6, "total_token_count": 22},
    ),
]


def _params(gap: str) -> list[Any]:
    """One param per case; the table must name every exchange recorded (a new capture fails collection)."""
    if WIRE.is_dir():
        recorded = {path.name.split(".")[0] for path in WIRE.glob("*sse.*")}
        assert recorded == {case.name for case in CASES}, (
            f"captures without a case: {recorded - {c.name for c in CASES}}"
        )
    params = []
    for case in CASES:
        marks: list[Any] = []
        if case.skip:
            marks.append(pytest.mark.skip(reason=case.skip))
        elif getattr(case, gap):
            marks.append(pytest.mark.xfail(strict=True, reason=getattr(case, gap)))
        params.append(pytest.param(case, id=case.name, marks=marks))
    return params


# --------------------------------------------------------------------------------------------------- helpers

_ABSENT = object()


def _endpoint(case: Case) -> Endpoint:
    """The endpoint of the capture's request line (``POST …/text-generation/…``), else the case's stated one."""
    request_line = wire_text(f"{case.name}.request.header.txt").splitlines()[0]
    if not request_line.startswith("POST "):
        assert case.headerless is not None, f"{case.name}: the header has no request line, say which endpoint"
        return case.headerless[0]
    assert case.headerless is None, f"{case.name}: the header has a request line: {request_line}"
    if "/multimodal-generation/" in request_line:
        return "multimodal"
    assert "/text-generation/" in request_line, request_line
    return "text"


def _without_index(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The captures replay ``index`` inside ``tool_calls``; it carries no meaning in a request."""
    out = json.loads(json.dumps(messages))
    for message in out:
        for call in message.get("tool_calls", ()):
            call.pop("index", None)
    return out


def _assert_text(actual: str, expected: str | Long) -> None:
    if isinstance(expected, Long):
        assert (len(actual), actual[: len(expected.head)], actual[-len(expected.tail) :]) == (
            expected.chars,
            expected.head,
            expected.tail,
        )
        assert hashlib.sha256(actual.encode()).hexdigest() == expected.sha256
    else:
        assert actual == expected


def _replay(text: str, citation_format: str | None = None) -> ChatResponse[Any]:
    """An SSE body fed line by line, as the client reads it, into one ``ChatResponse``."""
    decoder, state = SSEDecoder(complete_on_data=True), StreamState(citation_format=citation_format)
    events = [event for line in text.splitlines() if (event := decoder.feed(line)) is not None]
    assert events
    assert all((e.event, e.status) == ("result", 200) for e in events)
    return ChatResponse.from_updates([parse_stream_event(json.loads(e.data), state) for e in events])


# ----------------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("case", _params("request_gap"))
def test_request_reproduces_the_capture(case: Case) -> None:
    capture = wire_json(f"{case.name}.request.body.json")
    model, endpoint, stream = capture["model"], _endpoint(case), "-sse" in case.name

    for key, value in case.refused.items():
        with pytest.raises(ChatClientInvalidRequestException, match=f"'{key}'"):
            build_request(case.messages, {**case.options, key: value}, model=model, endpoint=endpoint, stream=stream)
    body = build_request(case.messages, case.options, model=model, endpoint=endpoint, stream=stream)

    assert body["model"] == model
    if "prompt" in capture["input"]:
        assert case.prompt, f"{case.name}: the capture uses input.prompt; say how we send it"
        expected = [{"role": "user", "content": capture["input"]["prompt"]}]
    else:
        expected = _without_index(capture["input"]["messages"])
    assert body["input"] == {"messages": expected}

    ours, theirs = body["parameters"], capture["parameters"]
    assert set(case.differs) <= ours.keys() | theirs.keys(), "a listed difference names no parameter"
    for key in sorted(ours.keys() | theirs.keys()):
        if key in case.differs:
            assert ours.get(key, _ABSENT) != theirs.get(key, _ABSENT), f"{key} is listed as differing but matches"
        else:
            assert ours.get(key, _ABSENT) == theirs.get(key, _ABSENT), key

    assert endpoint_for_model(model) == endpoint


@pytest.mark.parametrize("case", _params("response_gap"))
def test_response_parses_to_the_right_contents(case: Case) -> None:
    body = wire_text(f"{case.name}.response.body.txt")
    stream = "-sse" in case.name

    if case.error is not None:
        status, code, message = case.error
        if stream:
            decoder = SSEDecoder(complete_on_data=True)
            events = [event for line in body.splitlines() if (event := decoder.feed(line)) is not None]
            assert [(e.event, e.status) for e in events] == [("error", status)]
            data = json.loads(events[0].data)
        else:
            status_line = wire_text(f"{case.name}.response.header.txt").splitlines()[0]
            assert status_line.startswith(f"HTTP/1.1 {status} ")
            data = json.loads(body)
        assert data == {"code": code, "message": message, "request_id": case.request_id}
        return

    cite = citation_format(wire_json(f"{case.name}.request.body.json")["parameters"])
    response = _replay(body, cite) if stream else parse_response(json.loads(body), citation_format=cite)
    contents = [content for message in response.messages for content in message.contents]
    assert response.response_id == case.request_id
    _assert_text("".join(c.text or "" for c in contents if c.type == "text"), case.answer)
    _assert_text("".join(c.text or "" for c in contents if c.type == "text_reasoning"), case.reasoning)
    calls = [(c.call_id, c.name, c.parse_arguments()) for c in contents if c.type == "function_call"]
    assert calls == list(case.calls)
    assert [(c.uri, c.media_type) for c in contents if c.type == "uri"] == list(case.media)
    assert response.finish_reason == case.finish
    assert response.usage_details == case.usage
    answer = "".join(c.text or "" for c in contents if c.type == "text")
    citations = [(a, c) for c in contents for a in c.annotations or () if c.type == "text"]
    assert [(a["additional_properties"]["index"], a["url"], _span(a)) for a, _ in citations] == list(case.citations)
    for annotation, content in citations:  # spans point at the markers, in the text content that carries them
        if (span := _span(annotation)) is not None:
            assert content.text[span[0] : span[1]] == f"[ref_{annotation['additional_properties']['index']}]"
    assert all(a["type"] == "citation" and a["tool_name"] == "web_search" and a["title"] for a, _ in citations)
    assert answer.count("[ref_") >= sum(1 for _, _, span in case.citations if span)
    code = [(c.call_id, c.inputs[0].text) for c in contents if c.type == "code_interpreter_tool_call" and c.inputs]
    assert code == list(case.code)


def _span(annotation: Any) -> tuple[int, int] | None:
    regions = annotation.get("annotated_regions")
    return (regions[0]["start_index"], regions[0]["end_index"]) if regions else None
