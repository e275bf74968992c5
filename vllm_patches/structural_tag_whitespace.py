"""[Structured Output] Honour disable_any_whitespace inside structural tags (tool calls)

With `--structured-outputs-config '{"backend": "xgrammar", "disable_any_whitespace": true}'`,
JSON schemas and JSON objects are compiled without free whitespace, but structural tags are
compiled as they come. Since tool calling builds a structural tag for every request with
`tools` (`tool_choice` required or named, or any call under `--tool-strict-level`), the
arguments of a forced tool call still allow unbounded whitespace between JSON tokens. A model
that prefers newlines then writes `{"city"` followed by newlines until `max_tokens`, and the
call never parses. Seen with a small model and `hermes`:

    <tool_call>\n{"name": "get_weather", "arguments": {"city"\n\n\n\n\n\n...   (finish: length)

Fix: when disable_any_whitespace is set, the xgrammar backend bounds the whitespace of each
JSON-schema content of style "json" in the structural tag to one character per gap
(`max_whitespace_cnt: 1`; xgrammar requires a positive bound), unless the tag sets its own.
One character keeps the `", "` and `": "` that the models' own templates write, and rules out
a run. XML-style contents (qwen_xml, glm_xml, ...) are left alone: their whitespace is part of
the values. Tags in the deprecated `structures` form have no such field and are unchanged.

Test: tests/test_tool_calls.py (a named and a required call of the demo target end, with
arguments that follow the schema); tests/test_vllm_patches.py (the compiled grammar refuses a
run of newlines inside the arguments with the patch, and accepts it without).
"""

from __future__ import annotations

from vllm_patches import Edit, Patch

CALL = Edit(
    before="""            else:
                ctx = self.compiler.compile_structural_tag(grammar_spec)
""",
    after="""            else:
                if self.disable_any_whitespace:
                    grammar_spec = bound_structural_tag_whitespace(grammar_spec)
                ctx = self.compiler.compile_structural_tag(grammar_spec)
""",
)

HELPER = Edit(
    before="""def has_xgrammar_unsupported_json_features(""",
    after='''def bound_structural_tag_whitespace(structural_tag: str) -> str:
    """disable_any_whitespace for the JSON contents of a structural tag (e.g. tool-call
    arguments): at most one whitespace character between JSON tokens (xgrammar's
    max_whitespace_cnt must be positive), unless the tag bounds it itself."""

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if (
                node.get("type") == "json_schema"
                and node.get("style", "json") == "json"
                and node.get("max_whitespace_cnt") is None
            ):
                node["max_whitespace_cnt"] = 1
            for key, value in node.items():
                if key != "json_schema":  # the schema itself is not a format
                    visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    tag = json.loads(structural_tag)
    visit(tag)
    return json.dumps(tag)


def has_xgrammar_unsupported_json_features(''',
)

PATCH = Patch(
    name="structural_tag_whitespace",
    path="v1/structured_output/backend_xgrammar.py",
    edits=(CALL, HELPER),
)
