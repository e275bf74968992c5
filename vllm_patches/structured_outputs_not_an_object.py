"""[Frontend] A `structured_outputs` that is not an object is a 400, not a 500

`ChatCompletionRequest` and `CompletionRequest` check `structured_outputs` in a
`mode="before"` model validator (`check_structured_outputs_count`), on the raw request
before pydantic has checked the field's type. It calls `.get()` on the value, so a string, a
number, a list or `true` (`"structured_outputs": ""`, seen from a mutation fuzzer of chat
and completion bodies) raises `AttributeError: 'str' object has no attribute 'get'`, which
pydantic does not turn into a validation error: the server answers 500 with that message,
for a mistake that is the client's.

Fix: the validator refuses a value that is neither an object nor `StructuredOutputsParams`
with a `VLLMValidationError` naming `structured_outputs` (a 400), as it already does for
an object that names two kinds of constraint. `null` still means none.

Test: tests/vllm_patches/test_vllm_patches.py (both request models refuse a string, a list and a
number with a validation error that names the field; an object still validates) and
tests/serving/test_fuzz.py (no fuzzed body is answered 500).
"""

from __future__ import annotations

from vllm_patches import Edit, Patch

CHECK = Edit(
    before="""        structured_outputs_kwargs = data["structured_outputs"]
        # structured_outputs may arrive as a dict (from JSON/raw kwargs) or
        # as a StructuredOutputsParams dataclass instance.
        is_dataclass = isinstance(structured_outputs_kwargs, StructuredOutputsParams)
""",
    after="""        structured_outputs_kwargs = data["structured_outputs"]
        # structured_outputs may arrive as a dict (from JSON/raw kwargs) or
        # as a StructuredOutputsParams dataclass instance.
        is_dataclass = isinstance(structured_outputs_kwargs, StructuredOutputsParams)
        if not is_dataclass and not isinstance(structured_outputs_kwargs, dict):
            raise VLLMValidationError(
                "structured_outputs must be an object, e.g. "
                '{"json": <schema>}, {"regex": "..."} or {"choice": [...]}.',
                parameter="structured_outputs",
            )
""",
)

PATCHES = (
    Patch(
        name="structured_outputs_not_an_object (chat)",
        path="entrypoints/openai/chat_completion/protocol.py",
        edits=(CHECK,),
    ),
    Patch(
        name="structured_outputs_not_an_object (completion)",
        path="entrypoints/openai/completion/protocol.py",
        edits=(CHECK,),
    ),
)
