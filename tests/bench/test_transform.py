"""The transform study's check that every answer line sits in its own record's place."""

from __future__ import annotations

import json

from bench.batch_transform import BAD_RECORD, records_in_place, records_of


def test_the_transform_bench_finds_an_answer_out_of_place():
    records = records_of([{"prompt": "a"}, {"prompt": "b"}], 5)
    assert len(records) == 5 and records[2] == BAD_RECORD

    def line(text: str, prompt_tokens: int) -> bytes:
        answer = {"choices": [{"text": text}], "usage": {"prompt_tokens": prompt_tokens}}
        return json.dumps(answer).encode()

    error = json.dumps({"error": {"code": 400}}).encode()
    right = [line("A", 1), line("B", 2), error, line("A", 1), line("B", 2)]
    assert records_in_place(records, right) == 5
    swapped = [line("A", 1), line("A", 1), error, line("B", 2), line("B", 2)]
    assert records_in_place(records, swapped) == 1  # only the bad record's line still fits
