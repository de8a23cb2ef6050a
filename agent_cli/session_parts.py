"""The parts a session is made of, built from settings: the provider, the limits, the log's
redactor and where the log goes. Split from session.py, which wires them together."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_cli.config import Settings
from agent_cli.errors import UsageError
from agent_cli.providers.base import Provider
from agent_cli.tool_calls import Limits

__all__ = ["default_log_path", "limits_of", "make_provider", "make_redactor"]


def make_provider(settings: Settings) -> Provider:
    """The provider named in settings; SDKs are imported only by the one chosen."""
    if settings.provider == "scripted":
        if not settings.script:
            raise UsageError(
                "The scripted provider needs --script FILE (a JSON array of replies), e.g. "
                "--script examples/demo_script.json."
            )
        from agent_cli.providers.scripted import ScriptedProvider

        return ScriptedProvider.from_file(Path(settings.script), model=settings.model)
    if settings.provider == "openai":
        if settings.model == Settings.model_fields["model"].default:
            raise UsageError(
                "--provider openai needs a model the server knows: add --model NAME (for "
                "example --model gpt-4o, or a local model such as qwen2.5-coder for Ollama)."
            )
        from agent_cli.providers.openai_compat import OpenAIProvider

        return OpenAIProvider(settings.model, api_key=settings.api_key,
                              base_url=settings.base_url, max_retries=settings.retries,
                              retry_cap_s=settings.retry_cap_s,
                              strict=settings.strict_tools)
    from agent_cli.providers.anthropic import AnthropicProvider

    return AnthropicProvider(settings.model, api_key=settings.api_key, base_url=settings.base_url,
                             max_retries=settings.retries, retry_cap_s=settings.retry_cap_s,
                             prompt_cache=settings.prompt_cache, strict=settings.strict_tools)


def default_log_path(settings: Settings) -> Path:
    from agent_cli.log.store import new_log_path

    return new_log_path(settings)


def limits_of(settings: Settings) -> Limits:
    return Limits(max_turns=settings.max_turns, max_tokens=settings.max_tokens,
                  tool_timeout_s=settings.tool_timeout_s, output_cap=settings.output_cap,
                  repeat_failures=settings.repeat_failures,
                  max_panels_after_denial=settings.max_panels_after_denial,
                  max_read_bytes=settings.max_read_bytes,
                  max_tool_calls=settings.max_tool_calls, max_cost_usd=settings.max_cost_usd,
                  redact_results=settings.redact_results)


def make_redactor(settings: Settings) -> Any:
    from agent_cli.errors import ConfigError
    from agent_cli.redact import Redactor

    try:
        return Redactor.from_config(list(settings.redact_patterns))
    except ValueError as e:  # a bad pattern is a config mistake: one sentence, no traceback
        raise ConfigError(f"{e} Fix redact_patterns in your config.") from None
