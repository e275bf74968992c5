"""JSON schemas the tests ask for answers under."""

# Every value bounded (an enum and a boolean), so guided decoding must end the answer whatever
# a tiny or random-weight model would say.
CITY = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "enum": ["Paris", "Tokyo", "Lima"]},
        "sunny": {"type": "boolean"},
    },
    "required": ["city", "sunny"],
    "additionalProperties": False,
}
