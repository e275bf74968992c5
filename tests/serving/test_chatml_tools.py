"""The tools section the container adds to a ChatML chat template that teaches none
(serving/engine_args/chatml_tools.py): a chat without tools rendered byte for byte as the
model's own template renders it (on the real pair's template and tokenizer, through
transformers' apply_chat_template, which vLLM renders with), a chat with tools in Qwen2.5's
layout, and the templates it must leave alone. Then, on the real pair (`make serve`'s
SmolLM2-135M-Instruct, whose template has no tools section), named and required calls valid
for their schema on both routes, whole and streamed, and the share of prompts on which the
model calls an offered tool by itself under `auto`, printed."""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

from harness.locations import REAL_ROOT
from serving.engine_args.chatml_tools import (
    TOOLS_INTRO,
    TOOLS_OUTRO,
    NotChatml,
    default_system,
    render,
    tools_template,
    wrap,
)
from tests.serving.test_tool_calls import calls_of, streamed, whole
from tests.support.schemas import WEATHER

# The real pair's chat template, as the GGUF carries it and build/opt_ml_smollm2 serves it.
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
CONVERSATIONS = {
    "plain chat": [{"role": "user", "content": "What is deep learning?"}],
    "multi-turn": [
        {"role": "user", "content": "Name a prime number."},
        {"role": "assistant", "content": "7 is a prime number."},
        {"role": "user", "content": "And one larger than 100?"},
    ],
    "a system message": [
        {"role": "system", "content": "Answer in one short sentence."},
        {"role": "user", "content": "Why is the sky blue?"},
    ],
}
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city now.",
        "parameters": WEATHER,
    },
}
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}},
}


@pytest.mark.parametrize("conversation", list(CONVERSATIONS))
@pytest.mark.parametrize("generation_prompt", [True, False])
def test_a_chat_without_tools_renders_as_the_models_own_template(conversation, generation_prompt):
    from transformers.utils.chat_template_utils import render_jinja_template

    written = tools_template(SMOLLM2_TEMPLATE)
    messages = CONVERSATIONS[conversation]
    rendered = [
        render_jinja_template(
            [messages], chat_template=template, add_generation_prompt=generation_prompt
        )[0][0]
        for template in (SMOLLM2_TEMPLATE, written)
    ]
    assert rendered[1] == rendered[0]


@pytest.mark.skipif(
    not (REAL_ROOT / "model" / "tokenizer.json").is_file(),
    reason="the real pair is not built here (make real-model); make test builds it",
)
def test_on_the_real_pairs_tokenizer_every_prompt_without_tools_is_the_same_tokens():
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(REAL_ROOT / "model")
    assert tokenizer.chat_template == SMOLLM2_TEMPLATE
    written = tools_template(tokenizer.chat_template)
    for messages in CONVERSATIONS.values():
        own = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        ours = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False, chat_template=written
        )
        assert ours == own
        assert tokenizer(ours)["input_ids"] == tokenizer(own)["input_ids"]


def tools_section(system: str) -> str:
    listed = "\n" + json.dumps(TOOL)
    return f"<|im_start|>system\n{system}\n\n{TOOLS_INTRO}{listed}{TOOLS_OUTRO}<|im_end|>\n"


def test_with_tools_the_system_turn_gains_qwens_tools_section_and_the_rest_is_unchanged():
    written = tools_template(SMOLLM2_TEMPLATE)
    for messages in CONVERSATIONS.values():
        without = render(SMOLLM2_TEMPLATE, messages)
        system = messages[0]["content"] if messages[0]["role"] == "system" else SMOLLM2_SYSTEM
        system_turn = f"<|im_start|>system\n{system}<|im_end|>\n"
        assert without.startswith(system_turn)
        expected = tools_section(system) + without[len(system_turn) :]
        assert render(written, messages, [TOOL]) == expected


def test_calls_and_the_tools_answers_are_written_as_qwen25_writes_them():
    written = tools_template(SMOLLM2_TEMPLATE)
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 18}'},
        {"role": "tool", "tool_call_id": "call_2", "content": "sunny"},
    ]
    rendered = render(written, messages, [TOOL])
    assert rendered == tools_section(SMOLLM2_SYSTEM) + (
        "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
        "<|im_start|>assistant\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n'
        "</tool_call><|im_end|>\n"
        '<|im_start|>user\n<tool_response>\n{"temperature": 18}\n</tool_response>\n'
        "<tool_response>\nsunny\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    # Arguments sent back as the JSON string OpenAI clients send are written as they are.
    as_text = {**CALL, "function": {**CALL["function"], "arguments": '{"city": "Lima"}'}}
    messages[1] = {"role": "assistant", "content": "Looking.", "tool_calls": [as_text]}
    rendered = render(written, messages, [TOOL])
    assert '<|im_start|>assistant\nLooking.\n<tool_call>\n{"name": "get_weather", ' in rendered
    assert '"arguments": {"city": "Lima"}}\n</tool_call>' in rendered


def test_a_chatml_template_without_a_default_system_prompt_gets_none():
    plain = (
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] + '<|im_end|>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )
    assert default_system(plain) is None
    rendered = render(tools_template(plain), CONVERSATIONS["plain chat"], [TOOL])
    assert rendered.startswith(f"<|im_start|>system\n{TOOLS_INTRO}")


LLAMA3 = (
    "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% endif %}"
)
CHATML_WITH_TOOLS_OF_ITS_OWN = SMOLLM2_TEMPLATE.replace(
    "{% endfor %}", "{% endfor %}{% if tools %}{{ tools | tojson }}{% endif %}", 1
)


@pytest.mark.parametrize(
    ("template", "why"),
    [
        (LLAMA3, "does not render plain ChatML"),
        (CHATML_WITH_TOOLS_OF_ITS_OWN, "renders `tools` in a way of its own"),
        ("{{ raise_exception('no chat here') }}", "fails on a plain conversation"),
    ],
)
def test_a_template_that_is_not_plain_chatml_is_left_alone_with_the_reason(template, why):
    with pytest.raises(NotChatml, match=why):
        tools_template(template)


def test_the_original_is_kept_whole_at_its_edges_and_with_its_macros():
    # A leading newline (which trim_blocks would eat after {% else %}), trailing blanks on the
    # last line (which lstrip_blocks would eat before {% endif %}), a macro and a set.
    original = (
        "\n{% macro turn(role, text) %}<|im_start|>{{ role }}\n{{ text }}<|im_end|>\n"
        "{% endmacro %}{% set greeting = 'hi' %}{% for message in messages %}"
        "{{ turn(message['role'], message['content']) }}{% endfor %}\n   "
    )
    for messages in CONVERSATIONS.values():
        assert render(wrap(original, None), messages) == render(original, messages)


# On the real pair: what the container serves with the template above.
ROUTES = ("/invocations", "/v1/chat/completions")
NAMED = {"type": "function", "function": {"name": "get_weather"}}
QUESTION = [{"role": "user", "content": "What is the weather like in Paris today?"}]
# A weather tool as an application would write it: any city.
ANY_CITY = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city, e.g. London"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a given city.",
        "parameters": ANY_CITY,
    },
}
AUTO_PROMPTS = [
    "What is the weather like in Paris today?",
    "Is it raining in London right now?",
    "How hot is it in Cairo?",
    "What's the temperature in Tokyo in celsius?",
    "Tell me the current weather in New York.",
    "Do I need an umbrella in Seattle today?",
    "Weather in Berlin, please.",
    "Is it sunny in Madrid?",
    "How cold is it in Moscow right now, in fahrenheit?",
    "Check the weather for Sydney.",
]


def forced(choice) -> dict:
    return {
        "messages": QUESTION,
        "tools": [TOOL],
        "tool_choice": choice,
        "max_tokens": 64,
        "temperature": 0,
    }


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("choice", ["named", "required"])
def test_the_real_pair_makes_a_forced_call_valid_for_its_schema(real, route, choice):
    body = forced(NAMED if choice == "named" else "required")
    calls = calls_of(whole(real, route, body))
    assert [call["name"] for call in calls] == ["get_weather"], calls
    jsonschema.validate(json.loads(calls[0]["arguments"]), WEATHER)
    pieces = streamed(real, route, body)["calls"]
    assert [json.loads(call["arguments"]) for call in pieces] == [
        json.loads(call["arguments"]) for call in calls
    ]


def test_the_real_pair_under_auto_calls_the_weather_tool_on_a_measured_share(real):
    called = 0
    for prompt in AUTO_PROMPTS:
        body = {
            "messages": [{"role": "user", "content": prompt}],
            "tools": [WEATHER_TOOL],
            "max_tokens": 48,
            "temperature": 0,
        }
        message = whole(real, "/invocations", body)
        calls = calls_of(message)
        for call in calls:
            assert call["name"] == "get_weather", message
            jsonschema.validate(json.loads(call["arguments"]), ANY_CITY)
        called += bool(calls)
    print(f"\nauto: the real pair called the weather tool on {called} of {len(AUTO_PROMPTS)}")
    # The agent loop goes on: the call and the tool's answer are rendered back for it.
    sent = {**CALL, "function": {**CALL["function"], "arguments": '{"city": "Paris"}'}}
    answered = [
        *QUESTION,
        {"role": "assistant", "content": None, "tool_calls": [sent]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 18}'},
    ]
    reply = httpx.post(
        f"{real.url}/v1/chat/completions",
        json={"messages": answered, "tools": [TOOL], "max_tokens": 32, "temperature": 0},
        timeout=120,
    )
    assert reply.status_code == 200, reply.text
