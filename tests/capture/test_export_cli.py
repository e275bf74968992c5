"""`python -m capture export`: a summary line and exit 0; bad arguments a sentence and exit 2,
before anything is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from capture.__main__ import run as capture_cli
from capture.formats import OPENAI_FILE, SHAREGPT_FILE
from tests.support.capture import chat_answer, chat_request, container_line, write_lines
from tests.support.cli import fails, run_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def capture_file(tmp_path: Path) -> Path:
    return write_lines(
        tmp_path / "captures" / "a.jsonl",
        [container_line(chat_request(), chat_answer()), "not json"],
    )


def test_summary_line(capture_file: Path, tmp_path: Path) -> None:
    code, out, err = run_cli(
        capture_cli, ["export", str(capture_file.parent), "--out", str(tmp_path / "t")]
    )
    assert (code, err) == (0, "")
    assert out == (
        f"read 2 records from 1 file; wrote 1 to {tmp_path / 't'} ({OPENAI_FILE}, "
        f"{SHAREGPT_FILE}); skipped 1: malformed_line 1\n"
    )


def test_nothing_usable_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "in.jsonl", ['{"inputs": "hi"}'])
    code, out, err = run_cli(capture_cli, ["export", str(path), "--out", str(tmp_path / "t")])
    assert code == 0 and "wrote 0" in out and "unknown_record 1" in out
    assert err.startswith("warning: no record became a training conversation")
    assert (tmp_path / "t" / OPENAI_FILE).read_text() == ""


def test_missing_input(tmp_path: Path) -> None:
    fails(
        capture_cli,
        ["export", str(tmp_path / "nowhere"), "--out", str(tmp_path / "t")],
        "nowhere does not exist",
        "name capture files",
    )
    assert not (tmp_path / "t").exists()


def test_folder_without_capture_files(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not a capture")
    fails(
        capture_cli,
        ["export", str(tmp_path / "empty"), "--out", str(tmp_path / "t")],
        "no *.jsonl files",
    )


def test_out_that_cannot_be_a_folder(capture_file: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    fails(
        capture_cli,
        ["export", str(capture_file), "--out", str(blocker / "train")],
        f"--out {blocker / 'train'} is not a writable folder",
    )
    fails(
        capture_cli,
        ["export", str(capture_file), "--out", str(blocker)],
        "is not a writable folder",
    )


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        (["--min-answer-chars", "-1"], "--min-answer-chars -1 is below 0"),
        (["--max-chars", "0"], "--max-chars 0 is below 1"),
        (["--min-answer-chars", "50", "--max-chars", "40"], "nothing could be kept"),
        (["--system", "  "], "--system is empty"),
    ],
)
def test_bad_numbers_and_text(
    options: list[str], fragment: str, capture_file: Path, tmp_path: Path
) -> None:
    fails(
        capture_cli, ["export", str(capture_file), "--out", str(tmp_path / "t"), *options], fragment
    )
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize(
    "argv",
    [[], ["export"], ["export", "x.jsonl"], ["export", "x", "--out", "o", "--max-chars", "lots"]],
)
def test_argparse_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run_cli(capture_cli, argv)
    assert code == 2
    assert "usage:" in capsys.readouterr().err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capture_cli, ["export", "--help"])[0] == 0
    assert "--min-answer-chars" in capsys.readouterr().out


def test_module_entry_point(capture_file: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "capture", "export", str(capture_file), "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("read 2 records from 1 file; wrote 1")
    assert (tmp_path / SHAREGPT_FILE).exists()
