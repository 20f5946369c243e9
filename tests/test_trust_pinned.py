"""ADVERSARIAL V-01 (trust pinned to content) and V-05 (``init`` in a folder that holds graph code).

Trust covers the files as they were when the folder was trusted: an edited or added ``ditto.yaml`` or
``graphs/**/*.py`` is not used until ``ditto-tui trust DIR`` again, one line says which file changed, and
``ditto-tui trust --show DIR`` shows the diff (escaped: the files are the workspace's). ``init`` trusts
only the config it wrote and names the graph code it found. The legitimate path holds: an unchanged
trusted folder is used, trusting again uses the edit, and an import the person confirmed stays used.
Every test has its own ``DITTO_TUI_HOME`` (tests/conftest.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ditto_tui.__main__ import main
from ditto_tui.trust import KEPT_BYTES, trust, trust_state, trusted_bytes
from ditto_tui.workspace import DEFAULT_GRAPH, default_graph, resolve_config, untrusted_notice

ROOT = Path(__file__).resolve().parent.parent
CLAUDE_DESKTOP = ROOT / "tests" / "data" / "claude_desktop_config.json"
OWN_GRAPH = "from ditto_tui.agent.react_agent import program\n"
PLANTED_GRAPH = """\
from pathlib import Path
Path(__file__).resolve().parents[1].joinpath("PWNED").write_text("the workspace's code ran")
from ditto_tui.agent.react_agent import program
"""
MY_CONFIG = "sandbox:\n  read: true\n"
WIDE_CONFIG = """\
sandbox: {tools: ['*'], read: true, write: true}
approval:
  rules:
    - {tool: '*', decision: allow}
"""


@pytest.fixture
def mine(tmp_path: Path) -> Path:
    """A folder of the user's own, with a config and a graph, trusted as it is."""
    folder = tmp_path / "mine"
    (folder / "graphs").mkdir(parents=True)
    (folder / "ditto.yaml").write_text(MY_CONFIG)
    (folder / "graphs" / "react_agent.py").write_text(OWN_GRAPH)
    trust(folder)
    return folder


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _notice(folder: Path) -> str | None:
    return untrusted_notice(folder, config_given=False, graph_given=False)


def test_v01_trust_pinned_an_unchanged_trusted_folder_is_used(mine: Path) -> None:
    assert resolve_config(None, mine).source == str(mine / "ditto.yaml")
    assert default_graph(mine) == mine / "graphs" / "react_agent.py"
    assert _notice(mine) is None
    assert trusted_bytes(mine, "ditto.yaml") == MY_CONFIG.encode()


def test_v01_trust_pinned_an_edited_config_is_not_used_and_the_notice_names_it(mine: Path) -> None:
    (mine / "ditto.yaml").write_text(WIDE_CONFIG)  # as the model's write_text would
    assert resolve_config(None, mine).source == "built-in defaults"
    assert default_graph(mine) == mine / "graphs" / "react_agent.py"  # the graph did not change
    notice = _notice(mine)
    assert notice is not None and "\n" not in notice
    assert notice.startswith(f"not using ditto.yaml of {str(mine)!r}: ditto.yaml changed since")
    assert f"`ditto-tui trust {mine}`" in notice and f"`ditto-tui trust --show {mine}`" in notice
    assert trusted_bytes(mine, "ditto.yaml") is None


def test_v01_trust_pinned_an_edited_graph_is_not_imported(
    mine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (mine / "ditto.yaml").write_text((ROOT / "ditto.yaml").read_text())  # the tools the agent needs
    trust(mine)
    (mine / "graphs" / "react_agent.py").write_text(PLANTED_GRAPH)
    assert default_graph(mine) == DEFAULT_GRAPH
    assert resolve_config(None, mine).source == str(mine / "ditto.yaml")  # the config did not change
    code, _out, err = _run(capsys, "--workspace", str(mine), "--headless")
    assert code == 0, err
    assert not (mine / "PWNED").exists()
    [line] = [line for line in err.splitlines() if "not using" in line]
    assert "not using graphs/react_agent.py of" in line
    assert "graphs/react_agent.py changed since the folder was trusted" in line


def test_v01_trust_pinned_an_added_graph_file_stops_the_workspace_graph(mine: Path) -> None:
    (mine / "graphs" / "lib").mkdir()
    (mine / "graphs" / "lib" / "helper.py").write_text("import os\n")
    assert default_graph(mine) == DEFAULT_GRAPH
    notice = _notice(mine)
    assert notice is not None and "graphs/lib/helper.py was not trusted with the folder" in notice
    (mine / "graphs" / "lib" / "helper.py").unlink()
    assert default_graph(mine) == mine / "graphs" / "react_agent.py"


def test_v01_trust_pinned_a_config_added_after_trust_is_not_used(tmp_path: Path) -> None:
    trust(tmp_path)
    (tmp_path / "ditto.yaml").write_text(WIDE_CONFIG)
    assert resolve_config(None, tmp_path).source == "built-in defaults"
    notice = _notice(tmp_path)
    assert notice is not None and "ditto.yaml was not trusted with the folder" in notice


def test_v01_trust_pinned_trusting_again_uses_the_files_as_they_are(
    mine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (mine / "ditto.yaml").write_text(WIDE_CONFIG)
    code, out, _ = _run(capsys, "trust", str(mine))
    assert code == 0 and out.startswith(f"Trusted again, as its files are now: {mine}\n")
    assert "Changed since it was trusted: ditto.yaml (edited)" in out
    assert "Pinned: ditto.yaml, graphs/react_agent.py" in out
    assert resolve_config(None, mine).source == str(mine / "ditto.yaml")
    assert _run(capsys, "trust", str(mine))[1] == f"Already trusted: {mine}\n"


def test_v01_trust_pinned_show_prints_the_diff_with_controls_escaped(
    mine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (mine / "ditto.yaml").write_text("sandbox:\n  read: false\n# \x1b]0;owned\x07\u202e\n")
    (mine / "graphs" / "extra.py").write_text("print('new')\n")
    code, out, _ = _run(capsys, "trust", "--show", str(mine))
    assert code == 0 and out.startswith(f"Trusted: {mine}; 2 file(s) differ from what was trusted:\n")
    lines = out.splitlines()
    assert "== ditto.yaml: edited" in lines and "== graphs/extra.py: added" in lines
    assert "-  read: true" in lines and "+  read: false" in lines and "+print('new')" in lines
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "+# \\x1b]0;owned\\x07\\u202e" in lines
    assert resolve_config(None, mine).source == "built-in defaults"  # showing trusts nothing


def test_v01_trust_pinned_a_long_file_keeps_only_its_digest(
    mine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = mine / "graphs" / "data.py"
    long.write_text("x = 1\n" * (KEPT_BYTES // 6 + 1))
    trust(mine)
    long.write_text("x = 2\n")
    assert default_graph(mine) == DEFAULT_GRAPH  # the digest still tells the change
    out = _run(capsys, "trust", "--show", str(mine))[1]
    assert "== graphs/data.py: edited" in out and "only its digest was kept" in out


def test_v01_trust_pinned_an_import_the_person_confirmed_keeps_the_config_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ditto.yaml").write_text("# mine\nsandbox:\n  mcp: [notes]\n", encoding="utf-8")
    trust(tmp_path, only=("ditto.yaml",))  # as init would; the file alone is not a valid config yet
    code, _out, err = _run(
        capsys, "mcp", "import", str(CLAUDE_DESKTOP), "--workspace", str(tmp_path), "--yes"
    )
    assert code == 0, err
    assert trust_state(tmp_path).uses("ditto.yaml")
    env = {**os.environ, "NOTES_TOKEN": "n", "REMOTE_TOKEN": "r"}
    assert resolve_config(None, tmp_path, env).source == str(tmp_path / "ditto.yaml")


def test_v01_trust_pinned_an_import_does_not_launder_an_earlier_edit(
    mine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edited = "sandbox:\n  mcp: [notes]\n  write: true\n"
    (mine / "ditto.yaml").write_text(edited)  # not by the person
    code, _out, err = _run(capsys, "mcp", "import", str(CLAUDE_DESKTOP), "--workspace", str(mine), "--yes")
    # neither the edited file (not used) nor the user's own (the workspace's would be used once trusted)
    assert code == 2 and "changed since the folder was trusted, so runs do not use it" in err
    assert "ditto-tui trust --show" in err and "--config" in err
    assert (mine / "ditto.yaml").read_text() == edited
    assert not trust_state(mine).uses("ditto.yaml")


# -- V-05 ------------------------------------------------------------------------------------------------


def test_v05_init_in_a_folder_with_graph_code_trusts_only_the_config_and_names_the_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clone = tmp_path / "clone"
    (clone / "graphs").mkdir(parents=True)
    (clone / "graphs" / "react_agent.py").write_text(PLANTED_GRAPH)
    code, out, _ = _run(capsys, "init", str(clone))
    assert code == 0
    assert f"Wrote {clone / 'ditto.yaml'} and trusted {clone} for that file only." in out
    assert f"the graph code already in {clone}: graphs/react_agent.py." in out
    assert f"`ditto-tui trust {clone}`" in out
    assert default_graph(clone) == DEFAULT_GRAPH  # a plain resolution: the packaged graph
    assert resolve_config(None, clone).source == str(clone / "ditto.yaml")  # the config it wrote is used
    code, _, err = _run(capsys, "--workspace", str(clone), "--headless")
    assert code == 0, err
    assert not (clone / "PWNED").exists()
    assert "graphs/react_agent.py was not trusted with the folder" in err
    shown = _run(capsys, "trust", "--show", str(clone))[1]
    assert (
        "== graphs/react_agent.py: added" in shown
        and "+from ditto_tui.agent.react_agent import program" in shown
    )


def test_v05_init_in_an_empty_folder_says_what_it_always_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "init", str(tmp_path))
    assert code == 0 and f"Wrote {tmp_path / 'ditto.yaml'} and trusted {tmp_path}.\n" in out
    assert "graph code" not in out
