"""The agent workload: seeded sessions, their first tool choice rotated."""

from __future__ import annotations

from workloads.agent import sessions


def test_agent_sessions_rotate_the_first_tool_choice_and_name_the_tool_asked_for():
    drawn = sessions(707070, 30)
    assert drawn == sessions(707070, 30)  # seeded: the same sessions on every machine
    choices = [session.first_choice for session in drawn]
    assert {"auto", "required"} <= {choice for choice in choices if isinstance(choice, str)}
    named = [
        (choice, session)
        for choice, session in zip(choices, drawn, strict=True)
        if isinstance(choice, dict)
    ]
    assert named
    for choice, session in named:
        offered = {tool["function"]["name"] for tool in session.tools}
        assert choice["function"]["name"] in offered
    assert all(session.messages[-1]["role"] == "user" for session in drawn)
