"""Where the server's Settings come from: the workspace's [tool.gradlint].

The one place that knows how configuration is found, so the rest of the
server only asks "settings for this path".  Results are cached per path
until a pyproject.toml changes (``clear``).
"""

from __future__ import annotations

import os

from gradlint.options.settings import Settings


class ConfigProblem(Exception):
    """The configuration could not be read; the message is for the user."""


def _load(path: str) -> Settings:
    """Settings for one file: the nearest pyproject.toml upward from its directory."""
    from gradlint.options.config import ConfigError, settings_for_file

    try:
        return settings_for_file(path)
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None


class SettingsCache:
    def __init__(self) -> None:
        self._by_path: dict[str, tuple[Settings, str | None]] = {}
        self.generation = 0  # bumped on every reload, so results of older settings are not published

    def get(self, path: str) -> tuple[Settings, str | None]:
        """(settings, problem): on a broken configuration, the defaults and the readable error."""
        key = os.path.abspath(path)
        if key not in self._by_path:
            try:
                self._by_path[key] = (_load(key), None)
            except ConfigProblem as exc:
                self._by_path[key] = (Settings.default(), str(exc))
        return self._by_path[key]

    def clear(self) -> None:
        self._by_path.clear()
        self.generation += 1


def is_config_file(uri_or_path: str) -> bool:
    return uri_or_path.replace("\\", "/").rsplit("/", 1)[-1] == "pyproject.toml"
