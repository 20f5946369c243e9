"""``kill -9`` of a headless run at random points: no recorded execution lacks its decision, and the
journal still reads back and opens in the replay."""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

from ditto_tui.runtime import ApprovalResolved, NodeFinished
from ditto_tui.supervise import JournalRead, read_journal
from ditto_tui.tui.replay import ReplayApp
from ditto_tui.tui.screens.replay import ReplayScreen
from tests.journal.journal_fixtures import STEPS_CONFIG, STEPS_GRAPH, executions, journals, make_workspace

SEEDS = range(20)
AT_ONCE = 5
EVENTS_PER_RUN = 30  # run_started, 6 × (started, requested, resolved, finished), observe, output, finished


async def _run_until_killed(root: Path, seed: int) -> int | None:
    """Start the run; kill it with SIGKILL after a random number of printed events plus a random delay."""
    rng = random.Random(seed)
    kill_after, delay = rng.randint(1, EVENTS_PER_RUN - 2), rng.uniform(0.0, 0.035)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ditto_tui",
        "run",
        str(STEPS_GRAPH),
        "--headless",
        "--approve",
        "allow",
        "--workspace",
        str(root),
        "--config",
        str(root / "ditto.yaml"),
        cwd=root,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    try:
        for _ in range(kill_after):
            if not await process.stdout.readline():
                break
        await asyncio.sleep(delay)
        if process.returncode is None:
            process.kill()
    finally:
        await process.communicate()
    return process.returncode


def _check_decisions_precede_executions(root: Path, journal: JournalRead) -> None:
    approved: dict[str, int] = {}
    for index, event in enumerate(journal.events):
        if isinstance(event, ApprovalResolved) and event.decision == "approve":
            approved[event.call_id] = index
        if isinstance(event, NodeFinished) and event.node_type == "INTERACTION.ACT.TOOL":
            call_id = event.output["callId"]
            assert approved.get(call_id, len(journal.events)) < index, (
                f"{call_id} finished without a decision"
            )
    for call_id in executions(root):
        assert call_id in approved, f"{call_id} executed but its approval is not in the journal"


async def test_kill_9_at_random_points_never_loses_a_decision_before_its_execution(tmp_path: Path) -> None:
    roots = [make_workspace(tmp_path, STEPS_CONFIG, name=f"seed-{seed}") for seed in SEEDS]
    codes: list[int | None] = []
    for start in range(0, len(roots), AT_ONCE):
        batch = list(zip(roots[start : start + AT_ONCE], SEEDS[start : start + AT_ONCE], strict=True))
        codes += await asyncio.gather(*(_run_until_killed(root, seed) for root, seed in batch))
    assert codes.count(-9) >= len(SEEDS) // 2, f"too few runs were killed mid-run: {codes}"
    read_back: list[JournalRead] = []
    for root, code in zip(roots, codes, strict=True):
        files = journals(root)
        if not files:
            assert executions(root) == []
            continue
        journal = read_journal(files[0])
        _check_decisions_precede_executions(root, journal)
        if code == 0:
            assert journal.finished is not None and not journal.truncated_tail
        read_back.append(journal)
    assert read_back
    for journal in read_back:
        app = ReplayApp(journal)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, ReplayScreen)
            assert screen.position == len(journal.events) and screen.sub_title is not None
            assert screen.sub_title.endswith(
                f"event {len(journal.events)}/{len(journal.events)}"
                + ("" if journal.finished is not None else " · unfinished")
            )
