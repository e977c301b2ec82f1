"""The Pulumi side of kraftform: dynamic providers over the same planner and applier as the CLI.

Importing it in Pulumi's dynamic provider host (where the engine's calls unpickle kraftform's providers) makes
the host report a user error (`KraftformError`) as its message alone: the host formats every exception a provider
raises as a Python traceback, which `pulumi up` would print above the one sentence the user can act on. Anything
else keeps its traceback (it is a bug to report).
"""

from __future__ import annotations

import sys
import traceback
from types import ModuleType
from typing import Any


class _UserErrorsAsMessages:
    """`traceback` as the host's `_abort_with_traceback` uses it, with `format_exc` telling user errors apart."""

    def __init__(self, real: ModuleType) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def format_exc(self, *args: Any, **kwargs: Any) -> str:
        from kraftform.errors import KraftformError

        error = sys.exc_info()[1]
        if isinstance(error, KraftformError):
            return str(error)
        return str(self._real.format_exc(*args, **kwargs))


def _in_provider_host() -> None:
    host = sys.modules.get("__main__")
    # The host is `python -m pulumi.dynamic`: its __main__ wraps each call in `_abort_with_traceback`.
    if host is not None and hasattr(host, "_abort_with_traceback") and getattr(host, "traceback", None) is traceback:
        host.traceback = _UserErrorsAsMessages(traceback)  # type: ignore[attr-defined]


_in_provider_host()
