"""[Tool Calling] `tool_choice: required` keeps a Hermes-style model's parallel calls

Hermes-style chat templates (Hermes 2 Pro, Qwen2.5, Qwen3: vLLM's `hermes` and `longcat`
structural tags) write parallel tool calls one per line:

    <tool_call>
    {"name": "get_time", "arguments": {"city": "Oslo"}}
    </tool_call>
    <tool_call>
    {"name": "get_time", "arguments": {"city": "Lima"}}
    </tool_call>

Under strict tool calling with `tool_choice: "required"`, the structural tag joins the calls
with no separator (`TagsWithSeparatorFormat(separator="")`), so after the first call the
grammar allows only the end or `<tool_call>` at once. The model's newline is refused, the
greedy choice among what is left is the end, and the answer loses every call after the first,
silently (seen with a small Hermes-template model asked for the time in two cities: two calls
under `auto`, one under `required`). The fix joins them with the newline the templates write,
as `auto` (triggered tags) already allows. `tool_choice` naming a function stops after its one
call and is unchanged, and so is `parallel_tool_calls: false`, which stops after the first.

Test: tests/test_vllm_patches.py (the compiled `required` grammar of a hermes structural tag
accepts two calls joined by a newline and still ends after either); bench fidelity (a required
answer equals the free one where the free one made several valid calls).
"""

from __future__ import annotations

from vllm_patches import Edit, Patch

SEPARATOR = Edit(
    before="""    else:
        suffix_tag = TagsWithSeparatorFormat(
            tags=tags,
            separator="",
            at_least_one=True,
        )

    return StructuralTag(format=suffix_tag)
""",
    after="""    else:
        # Parallel calls one per line, as the Hermes-style templates write them.
        suffix_tag = TagsWithSeparatorFormat(
            tags=tags,
            separator="\\n",
            at_least_one=True,
        )

    return StructuralTag(format=suffix_tag)
""",
)

PATCH = Patch(
    name="hermes_parallel_calls",
    path="tool_parsers/structural_tag_registry.py",
    edits=(SEPARATOR,),
)
