"""What ``cronwheel serve`` refuses in a configuration whose keys are each valid alone: keys
that contradict each other (``core.config.combination_problems``) and what only this host can
answer (is the sendmail program there?). `serve` checks them before anything starts,
`cronwheel config` prints them, and a SIGHUP that finds one changes nothing, so a file that
`cronwheel config` passes is one the daemon takes. Each refusal names the key and where its
value came from: the file and line, the flag, or the variable.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cronwheel.core.config import ConfigError, combination_problems


@dataclass(frozen=True)
class Setting:
    """One key as ``serve`` resolves it."""

    value: Any
    origin: str  #: "FILE:LINE", "flag --slots", "env CRONWHEEL_SLOTS" or "default"
    file: str | None = None  #: set when the value came from the configuration file
    line: int | None = None

    def error(self, key: str, problem: str) -> ConfigError:
        """``problem`` said where this value came from: ``FILE:LINE: key 'k': …`` for the file,
        ``--flag: …`` or ``$CRONWHEEL_KEY: …`` otherwise (the key rides along for the event)."""
        if self.file is not None:
            return ConfigError(self.file, problem, self.line, key)
        err = ConfigError(self.named() or self.origin, problem)
        err.key = key
        return err

    def named(self) -> str | None:
        """A flag's or a variable's name as a message starts with it (None: not one of those)."""
        kind, _, name = self.origin.partition(" ")
        return {"flag": name, "env": f"${name}"}.get(kind)

    def written(self, key: str) -> str | None:
        """Where the value was written, as a message starts with it: ``FILE:LINE: key 'k'`` or
        ``$CRONWHEEL_KEY``; None for a flag (the daemon's messages name it) or a default."""
        if self.file is not None:
            return f"{self.file}:{self.line}: key {key!r}"
        return self.named() if self.origin.startswith("env ") else None


def refusals(settings: Mapping[str, Setting]) -> list[ConfigError]:
    """Everything ``serve`` would refuse, in the order of the checks (empty: nothing)."""

    def origin(key: str) -> str:
        setting = settings.get(key)
        if setting is None or setting.origin == "default":
            return "the default: the number of CPUs" if key == "workers" else "the default"
        return setting.origin

    values = {key: s.value for key, s in settings.items()}
    # serve's own default for workers (daemon/serve.py run_from_cli)
    found = combination_problems(values, origin, max(1, os.cpu_count() or 1))
    sendmail = values.get("sendmail")
    if sendmail and shutil.which(str(sendmail)) is None:
        # the daemon looks it up at start (engine/channels.py MailConfig.parse) as here
        found.append(("sendmail", f"{sendmail!r} is not an executable program (give its path, e.g. /usr/sbin/sendmail)"))
    return [settings[key].error(key, problem) for key, problem in found]


def warnings(settings: Mapping[str, Setting]) -> list[str]:
    """What may still stop ``serve`` but cannot be judged now: an ``http`` host name that does
    not resolve here and now. Not a refusal: at boot the name service may come up after the
    check, and the file may be checked on another host than the one it is for."""
    setting = settings.get("http")
    if setting is None or setting.value is None:
        return []
    host, _, port = str(setting.value).rpartition(":")
    host = host.strip("[]") or "127.0.0.1"  # as the daemon reads it (daemon/options.py parse_hostport)
    try:
        socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, socket.gaierror) else str(exc)
        return [str(setting.error("http", f"{host!r} does not resolve on this host now ({why}): "
                                  "serve cannot listen on it unless it does when serve starts"))]  # fmt: skip
    return []
