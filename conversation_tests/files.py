"""Tests in files: JSONL (one test per line, ``{"name", "turns"}``) and CSV (one turn per row:
``test,message,expect,reference``, where ``expect`` is the JSON list of the turn's checks and
consecutive rows of one test name make one test). Parsing only; storing is ``services``."""

from __future__ import annotations

import csv
import io
import json

CSV_COLUMNS = ["test", "message", "expect", "reference"]
FORMATS = ("jsonl", "csv")
MAX_FILE_CHARS = 1_000_000


class FileInvalid(Exception):
    def __init__(self, issues: list[dict]):
        super().__init__("the file cannot be read")
        self.issues = issues


def _problem(line: int | None, message: str, field: str = "content") -> dict:
    return {"test": None, "line": line, "turn": None, "check": None, "field": field, "message": message}


def parse(fmt: str, content: str) -> list[tuple[str, list, int]]:
    """(name, turns, first line) of every test in the file; ``FileInvalid`` when it is not readable."""
    if len(content) > MAX_FILE_CHARS:
        raise FileInvalid([_problem(None, f"a file has at most {MAX_FILE_CHARS} characters")])
    return _parse_jsonl(content) if fmt == "jsonl" else _parse_csv(content)


def _parse_jsonl(content: str):
    tests, problems = [], []
    for number, line in enumerate(content.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            problems.append(_problem(number, f"not JSON: {exc}"))
            continue
        if not isinstance(item, dict) or set(item) - {"name", "turns"} or "turns" not in item:
            problems.append(_problem(number, 'each line is a test: {"name": ..., "turns": [{"message": ..., "expect": [...]}]}'))
            continue
        tests.append((item.get("name") if isinstance(item.get("name"), str) else "", item["turns"], number))
    if problems:
        raise FileInvalid(problems)
    return tests


def _parse_csv(content: str):
    reader = csv.DictReader(io.StringIO(content))
    if reader.fieldnames is None or not {"test", "message"} <= set(reader.fieldnames):
        raise FileInvalid([_problem(1, f"the first row names the columns: {','.join(CSV_COLUMNS)} (test and message are required)")])
    tests: list[tuple[str, list, int]] = []
    problems = []
    try:
        for row in reader:
            number = reader.line_num
            name = (row.get("test") or "").strip()
            expect_text = (row.get("expect") or "").strip()
            try:
                expect = json.loads(expect_text) if expect_text else []
            except ValueError as exc:
                problems.append(_problem(number, f"expect is not a JSON list of checks: {exc}", "expect"))
                continue
            turn = {"message": row.get("message") or "", "expect": expect}
            if row.get("reference"):
                turn["reference"] = row["reference"]
            if tests and tests[-1][0] == name:
                tests[-1][1].append(turn)
            else:
                tests.append((name, [turn], number))
    except csv.Error as exc:
        problems.append(_problem(reader.line_num, f"not valid CSV: {exc}"))
    if problems:
        raise FileInvalid(problems)
    return tests


def render(fmt: str, tests) -> str:
    """The file of ``tests`` (objects with ``name`` and ``turns``) in ``fmt``."""
    if fmt == "jsonl":
        return "".join(json.dumps({"name": t.name, "turns": t.turns}, ensure_ascii=False) + "\n" for t in tests)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for test in tests:
        for turn in test.turns:
            writer.writerow([test.name, turn["message"], json.dumps(turn.get("expect", []), ensure_ascii=False), turn.get("reference", "")])
    return out.getvalue()
