"""The requests the product is measured and rehearsed with, shared by bench, the head's
lifecycle rehearsals and the tests: HumanEval and prose prompts (prompts), tool-use and JSON
questions under their grammars (structured), multi-turn agent sessions with tools (agent)."""
