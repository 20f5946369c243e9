"""The model provider a run uses, built from ``ditto.yaml`` ``infer:``."""

from __future__ import annotations

from pathlib import Path

from ditto_tui.config import InferConfig
from ditto_tui.errors import ConfigError
from ditto_tui.infer.provider import ModelProvider
from ditto_tui.infer.scripted import load_scripted_provider


def provider_from_config(config: InferConfig, *, workspace: Path) -> ModelProvider | None:
    """The provider ``infer:`` sets up, or ``None`` when it names none (scripted without a script).

    ``provider: openai`` needs ``baseUrl`` and ``model`` (``apiKey`` usually ``${SOME_KEY}``); a relative
    ``script`` path is read from the workspace.
    """
    if config.provider == "openai":
        missing = [key for key, value in (("baseUrl", config.base_url), ("model", config.model)) if not value]
        if missing:
            raise ConfigError(
                "\n".join(f"infer.{key}: is required when infer.provider is openai" for key in missing)
            )
        assert config.base_url is not None and config.model is not None
        from ditto_tui.infer.openai import create_openai_compatible_provider  # httpx loads only when used

        return create_openai_compatible_provider(
            base_url=config.base_url,
            model=config.model,
            api_key=config.api_key,
            timeout_s=config.timeout_seconds,
            stream=config.stream,
        )
    if config.script is None:
        return None
    script = Path(config.script)
    return load_scripted_provider(script if script.is_absolute() else workspace / script)


def resolve_provider(
    config: InferConfig, *, workspace: Path, default: ModelProvider | None = None
) -> ModelProvider | None:
    """The configured provider when ``infer:`` names one, else ``default`` (e.g. a graph's own script)."""
    return provider_from_config(config, workspace=workspace) or default
