"""What one MCP server may ask of the client is bounded (V-04), against a real server that floods.

``tests/mcp/servers/asking.py`` sends many sampling requests at once; the handler refuses, at once and
without asking anyone, a request too large, one past the server's pending requests, or one past its rate.
The journal keeps a refusal's digest and first KiB, not the request, and does not fsync it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ditto_tui.contracts import ToolCall
from ditto_tui.infer import create_scripted_provider
from ditto_tui.interaction import open_mcp_servers
from ditto_tui.supervise import QueueApprover
from ditto_tui.supervise.journal import CLIENT_REQUESTS_PLAN, DiskFile, RunJournal, read_journal
from ditto_tui.supervise.mcp_requests import (
    KEPT_BYTES,
    RECORDED_REFUSALS,
    REFUSALS_PER_LINE,
    McpRequests,
    RequestLimits,
    SamplingAnswer,
)
from tests.mcp.mcp_helpers import python_server, sandbox

KIB = 1024
NO = SamplingAnswer(approves=False, reason="not now")


class CountingFile(DiskFile):
    """A journal file on disk that counts its fsyncs."""

    syncs = 0

    def sync(self) -> None:
        CountingFile.syncs += 1
        super().sync()


@pytest.fixture
def journal(tmp_path: Path) -> RunJournal:
    CountingFile.syncs = 0
    return RunJournal(tmp_path / "runs", opener=CountingFile)


def handler(tmp_path: Path, journal: RunJournal, **options: Any) -> McpRequests:
    model = create_scripted_provider([{"content": "an answer"}] * 100, name="scripted-model")
    options.setdefault("inbox", QueueApprover())
    options.setdefault("timeout", 30)
    return McpRequests(workspace=tmp_path, provider=model, recorder=journal, **options)


async def flood(
    requests: McpRequests, tmp_path: Path, count: int, size: int, server: str = "asking"
) -> dict[str, list[str]]:
    """Have ``server`` send ``count`` sampling requests of ``size`` bytes at once; how each ended."""
    entries = {server: python_server("asking.py")}
    async with open_mcp_servers(
        entries, log_dir=tmp_path / "logs", client_requests=requests, allowed=[server]
    ) as registry:
        call = ToolCall(id="flood", name="flood", arguments={"count": count, "size": size})
        result = await registry.invoke(server, call, sandbox(tmp_path, server))
    assert result.status == "success", result
    assert isinstance(result.structured_content, Mapping)
    text = result.structured_content["result"]
    assert isinstance(text, str)
    outcome: dict[str, list[str]] = json.loads(text)
    return outcome


def decisions(journal: RunJournal) -> list[Mapping[str, Any]]:
    (path,) = sorted(journal.directory.glob("*.jsonl"))
    read = read_journal(path)
    assert read.header["plan"] == CLIENT_REQUESTS_PLAN and not read.problems()
    return read.client_requests()


def journal_file(journal: RunJournal) -> Path:
    (path,) = sorted(journal.directory.glob("*.jsonl"))
    return path


async def test_v04_sixty_requests_of_512_kib_are_refused_at_once_and_leave_a_small_journal(
    tmp_path: Path, journal: RunJournal
) -> None:
    requests = handler(tmp_path, journal)
    shown: list[Any] = []
    requests.inbox.on_request(shown.append)
    counted: list[tuple[str, int]] = []
    requests.on_refused(lambda server, count: counted.append((server, count)))

    outcome = await flood(requests, tmp_path, 60, 512 * KIB)

    assert outcome["answered"] == [] and len(outcome["errors"]) == 60
    assert all("over the limit of 262144" in error for error in outcome["errors"])
    assert shown == []  # never a pending request
    assert requests.refused("asking") == 60 and requests.refused_counts == {"asking": 60}
    assert counted[-1] == ("asking", 60)
    size = journal_file(journal).stat().st_size
    assert size < 200 * KIB, size  # the 60 requests were 30 MiB; the issue saw a 31.5 MB journal
    refused = decisions(journal)
    assert len(refused) == RECORDED_REFUSALS == 32  # the rest are counted, not recorded one by one
    assert {(d["request"], d["decision"], d["by"], d["bound"]) for d in refused} == {
        ("sampling", "refused", "limit", "size")
    }
    assert all("params" not in d for d in refused)
    assert all(d["params_bytes"] > 512 * KIB for d in refused)
    assert all(len(d["params_head"].encode()) <= KEPT_BYTES for d in refused)
    assert all(re.fullmatch(r"[0-9a-f]{64}", d["params_sha256"]) for d in refused)
    assert len({d["params_sha256"] for d in refused}) == 32  # each prompt starts with its own index
    indices = re.findall(r'"text":"(\d{4}):x', " ".join(d["params_head"] for d in refused))
    assert len(set(indices)) == 32
    longest = max(len(run) for run in re.findall("x+", journal_file(journal).read_text()))
    assert longest < KEPT_BYTES  # no more than the first KiB of any prompt is kept
    assert CountingFile.syncs == 0  # refusals are written, not fsynced


async def test_v04_past_eight_pending_requests_a_server_is_refused_until_one_ends(
    tmp_path: Path, journal: RunJournal
) -> None:
    requests = handler(tmp_path, journal, timeout=None)
    inbox = requests.inbox
    most: list[int] = []
    inbox.on_request(lambda request: most.append(len(inbox.all_pending())))

    def refused(server: str, count: int) -> None:
        if count == 12:  # the eight asked are still waiting: now the person rejects them
            for request in inbox.all_pending():
                inbox.resolve(request.request_id, NO)

    requests.on_refused(refused)
    outcome = await flood(requests, tmp_path, 20, 100)

    assert max(most) == 8
    waiting = [error for error in outcome["errors"] if "8 of its requests are waiting already" in error]
    rejected = [error for error in outcome["errors"] if "the user rejected" in error]
    assert (len(waiting), len(rejected), outcome["answered"]) == (12, 8, [])
    assert requests.refused("asking") == 12
    assert [d["bound"] for d in decisions(journal) if d["decision"] == "refused"] == ["pending"] * 12

    answered: list[Any] = []

    def reject(request: Any) -> None:
        answered.append(request)
        inbox.resolve(request.request_id, NO)

    inbox.on_request(reject)
    again = await flood(requests, tmp_path, 8, 100)  # the slots are free again once the requests ended
    assert len(answered) == 8 and requests.refused("asking") == 12
    assert all("the user rejected" in error for error in again["errors"])


async def test_v04_past_30_requests_a_minute_a_server_is_refused_and_told_once(
    tmp_path: Path, journal: RunJournal
) -> None:
    now = [1000.0]
    notes: list[str] = []
    requests = handler(tmp_path, journal, automatic=True, clock=lambda: now[0], notice=notes.append)

    outcome = await flood(requests, tmp_path, 40, 100)
    denied = [error for error in outcome["errors"] if "not allowed without a person" in error]
    too_often = [error for error in outcome["errors"] if "more than 30 times a minute" in error]
    assert (len(denied), len(too_often)) == (30, 10)  # the policy decided 30; the bound refused 10

    now[0] += 10  # ten seconds refill five requests' worth
    outcome = await flood(requests, tmp_path, 10, 100)
    assert sum("not allowed without a person" in error for error in outcome["errors"]) == 5
    assert requests.refused("asking") == 15

    other = await flood(requests, tmp_path, 5, 100, server="other")  # another server has its own bounds
    assert sum("not allowed without a person" in error for error in other["errors"]) == 5
    assert requests.refused("other") == 0
    told = [note for note in notes if "later refusals are only counted" in note]
    assert len(told) == 1 and "MCP server asking asked for sampling: refused" in told[0]


async def test_v04_an_elicitation_too_large_is_refused_and_the_limits_can_be_set(
    tmp_path: Path, journal: RunJournal
) -> None:
    requests = handler(tmp_path, journal, limits=RequestLimits(max_bytes=4 * KIB))
    shown: list[Any] = []
    requests.inbox.on_request(shown.append)
    fields = {"answer": {"title": "Answer", "description": "y" * (8 * KIB)}}
    entries = {"asking": python_server("asking.py")}
    async with open_mcp_servers(
        entries, log_dir=tmp_path / "logs", client_requests=requests, allowed=["asking"]
    ) as registry:
        call = ToolCall(id="form", name="ask_form", arguments={"fields": fields})
        result = await registry.invoke("asking", call, sandbox(tmp_path, "asking"))
    assert result.status != "success" and "over the limit of 4096" in result.model_dump_json()
    assert shown == [] and requests.refused("asking") == 1
    (refused,) = decisions(journal)
    assert (refused["request"], refused["bound"]) == ("elicitation", "size")
    assert len(refused["params_head"].encode()) <= KEPT_BYTES and "params" not in refused


async def test_v04_an_endless_flood_is_recorded_one_line_per_thousand_refusals(
    tmp_path: Path, journal: RunJournal
) -> None:
    requests = handler(tmp_path, journal, limits=RequestLimits(max_bytes=256))
    outcome = await flood(requests, tmp_path, 2_100, 400)
    assert len(outcome["errors"]) == 2_100 and requests.refused("asking") == 2_100
    refused = decisions(journal)
    one_by_one, counted = refused[:RECORDED_REFUSALS], refused[RECORDED_REFUSALS:]
    assert all("params_sha256" in d for d in one_by_one)
    assert [d["refused"] for d in counted] == [REFUSALS_PER_LINE, 2 * REFUSALS_PER_LINE]
    assert all("params_head" not in d for d in counted)
    assert journal_file(journal).stat().st_size < 64 * KIB
