"""A model script that cannot be read is named with the reason in words, never an exception's class."""

from __future__ import annotations

from pathlib import Path

import pytest

from ditto_tui.errors import ConfigError
from ditto_tui.infer.scripted import load_scripted_provider


def test_a_missing_model_script_says_why_in_words(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load_scripted_provider(tmp_path / "nowhere.yaml")
    assert str(raised.value) == "cannot read the model script 'nowhere.yaml': no such file or directory"


def test_a_model_script_that_is_not_text_says_so(tmp_path: Path) -> None:
    script = tmp_path / "binary.yaml"
    script.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ConfigError) as raised:
        load_scripted_provider(script)
    assert "Error" not in str(raised.value) and "not UTF-8 text" in str(raised.value)
