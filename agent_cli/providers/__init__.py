"""Providers turn a conversation into the next model reply. See base.Provider."""

from agent_cli.providers.base import ModelRequest, ModelResponse, Provider

__all__ = ["ModelRequest", "ModelResponse", "Provider"]
