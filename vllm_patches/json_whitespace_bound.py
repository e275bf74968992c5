"""[Structured Output] Bound JSON whitespace instead of forbidding it (`max_whitespace_cnt`),
and honour the whitespace setting inside structural tags (tool calls)

Guided JSON on xgrammar has two whitespace modes today, and both hurt:
- any whitespace (the default): a model that prefers newlines at some gap writes them until
  `max_tokens`, and the answer never parses (vllm#38696, vllm#50989; seen here with a small
  model: `{"city"\\n\\n\\n\\n...`, finish `length`);
- `disable_any_whitespace`: no whitespace at all, separators `,` and `:`. The answer ends, but
  the models write `", "` and `": "` (their chat templates render tool arguments that way)
  and indent their JSON, so a constrained answer leaves the model's own distribution at its
  first separator: the model is pushed onto token sequences it rarely saw, which can change
  what it says and not only its spacing, and a speculative drafter trained on the model's own
  text drafts what the grammar refuses.

xgrammar can bound the whitespace instead (`max_whitespace_cnt`, the number of whitespace
characters allowed in each gap between JSON tokens), and vLLM does not expose it. This adds
`StructuredOutputsConfig.max_whitespace_cnt` (default None: today's behaviour), e.g.

    --structured-outputs-config '{"backend": "xgrammar", "max_whitespace_cnt": 16}'

With it, JSON schemas, JSON objects and the JSON contents of structural tags are compiled with
whitespace allowed up to that bound: a greedy constrained answer equals the free one whenever
the free one is valid for the schema and keeps to the bound, and no answer can run on in
whitespace. `disable_any_whitespace` still wins where both are set.

Structural tags (every request with `tools` under strict tool calling: `tool_choice` required
or named, or any call under `--tool-strict-level`) were compiled as they came, ignoring
`disable_any_whitespace`, so a forced call's arguments allowed unbounded whitespace even with
it set. Their JSON-schema contents of style "json" now take the bound too (one character under
`disable_any_whitespace`: xgrammar's bound must be positive), unless the tag sets its own.
XML-style contents (qwen_xml, glm_xml, ...) are left alone: their whitespace is part of the
values. Tags in the deprecated `structures` form have no such field and are unchanged.

Only the xgrammar backend has the bound; the config refuses it with another backend, and a
bound below 1.

Test: tests/vllm_patches/test_vllm_patches.py (the config takes the field and refuses a bad one; the
compiled grammars of a JSON schema and of a forced call's arguments accept the model's `": "`
and indentation up to the bound and refuse a run past it; without the patch the field is
refused); tests/serving/test_structured_outputs.py and bench fidelity (a constrained answer equals
the free one byte for byte where the free one is valid).
"""

from __future__ import annotations

from vllm_patches import Edit, Patch

FIELD = Edit(
    before='''    which is still valid JSON. This is only supported for xgrammar
    and guidance backends."""
''',
    after='''    which is still valid JSON. This is only supported for xgrammar
    and guidance backends."""
    max_whitespace_cnt: int | None = None
    """If set, json output may have at most this many whitespace characters
    between JSON tokens (in JSON schemas, JSON objects and the JSON contents of
    structural tags), so a model keeps its own separators and indentation and
    cannot write whitespace until max_tokens. `disable_any_whitespace` takes
    precedence. Only supported for the xgrammar backend."""
''',
)

VALIDATION = Edit(
    before="""        if self.disable_additional_properties and self.backend != "guidance":
""",
    after="""        if self.max_whitespace_cnt is not None and (
            self.backend != "xgrammar" or self.max_whitespace_cnt < 1
        ):
            raise ValueError(
                "max_whitespace_cnt must be at least 1 and is only supported "
                "for the xgrammar backend."
            )
        if self.disable_additional_properties and self.backend != "guidance":
""",
)

CONFIG = Patch(
    name="json_whitespace_bound (config)",
    path="config/structured_outputs.py",
    edits=(FIELD, VALIDATION),
)

SETTING = Edit(
    before="""        self.disable_any_whitespace = (
            self.vllm_config.structured_outputs_config.disable_any_whitespace
        )
""",
    after="""        self.disable_any_whitespace = (
            self.vllm_config.structured_outputs_config.disable_any_whitespace
        )
        self.max_whitespace_cnt = (
            self.vllm_config.structured_outputs_config.max_whitespace_cnt
        )
""",
)

JSON = Edit(
    before="""        separators = (",", ":") if self.disable_any_whitespace else None
        if request_type == StructuredOutputOptions.JSON:
            ctx = self.compiler.compile_json_schema(
                grammar_spec,
                any_whitespace=not self.disable_any_whitespace,
                separators=separators,
            )
        elif request_type == StructuredOutputOptions.JSON_OBJECT:
            ctx = self.compiler.compile_json_schema(
                '{"type": "object"}',
                any_whitespace=not self.disable_any_whitespace,
                separators=separators,
            )
""",
    after="""        separators = (",", ":") if self.disable_any_whitespace else None
        # Whitespace between JSON tokens: none, at most max_whitespace_cnt, or any.
        max_whitespace_cnt = None if self.disable_any_whitespace else self.max_whitespace_cnt
        if request_type == StructuredOutputOptions.JSON:
            ctx = self.compiler.compile_json_schema(
                grammar_spec,
                any_whitespace=not self.disable_any_whitespace,
                separators=separators,
                max_whitespace_cnt=max_whitespace_cnt,
            )
        elif request_type == StructuredOutputOptions.JSON_OBJECT:
            ctx = self.compiler.compile_json_schema(
                '{"type": "object"}',
                any_whitespace=not self.disable_any_whitespace,
                separators=separators,
                max_whitespace_cnt=max_whitespace_cnt,
            )
""",
)

TAG = Edit(
    before="""            else:
                ctx = self.compiler.compile_structural_tag(grammar_spec)
""",
    after="""            else:
                # xgrammar's bound must be positive: one character for "no whitespace".
                bound = 1 if self.disable_any_whitespace else self.max_whitespace_cnt
                if bound is not None:
                    grammar_spec = bound_structural_tag_whitespace(grammar_spec, bound)
                ctx = self.compiler.compile_structural_tag(grammar_spec)
""",
)

HELPER = Edit(
    before="""def has_xgrammar_unsupported_json_features(""",
    after='''def bound_structural_tag_whitespace(structural_tag: str, bound: int) -> str:
    """At most `bound` whitespace characters between the JSON tokens of each JSON
    content of a structural tag (e.g. tool-call arguments), unless the tag bounds
    it itself."""

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if (
                node.get("type") == "json_schema"
                and node.get("style", "json") == "json"
                and node.get("max_whitespace_cnt") is None
            ):
                node["max_whitespace_cnt"] = bound
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

BACKEND = Patch(
    name="json_whitespace_bound",
    path="v1/structured_output/backend_xgrammar.py",
    edits=(SETTING, JSON, TAG, HELPER),
)

PATCHES = (CONFIG, BACKEND)
