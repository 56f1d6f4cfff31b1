"""One line for a failed download: what, from where, and the way out offline (a mirror filled by ``lsrbench
prefetch``)."""

from __future__ import annotations

import socket

from lsrbench.errors import InputError

__all__ = ["WAYS_OUT", "FetchFailed", "network_reason"]

WAYS_OUT = ("without a network, give a folder that holds it with --config mirror=DIR (laid out DIR/models/<model>/, "
            "DIR/data/<dataset>/), written by `lsrbench prefetch --mirror DIR` (same --configfile) on a connected machine")

# Exception class names (anywhere in the MRO, nothing imported) that mean the connection failed, not "no such thing".
NETWORK_ERRORS = frozenset({
    "ConnectionError", "Timeout", "ProxyError",  # requests (ConnectTimeout and ReadTimeout are Timeouts)
    "NetworkError", "TimeoutException",  # httpx (huggingface_hub): ConnectError, ReadError, timeouts, ProxyError
    "NewConnectionError", "MaxRetryError", "ProtocolError",  # urllib3 (under requests and pip)
    "URLError", "HTTPException",  # urllib (BEIR zips), http.client (RemoteDisconnected, IncompleteRead)
    "LocalEntryNotFoundError", "OfflineModeIsEnabled",  # huggingface_hub: not cached and not reachable
})


class FetchFailed(InputError):
    """A download that failed: ``what`` (e.g. ``ir_datasets 'vaswani'``) from ``where`` (URLs, an
    index, the hub), ``reason`` the library's own one-line cause."""

    def __init__(self, file, field: str | None, what: str, where: str, reason: str):
        self.what, self.where, self.reason = what, where, reason
        super().__init__(file, field, f"could not fetch {what} from {where} ({reason}); {WAYS_OUT}")

    def at(self, file, field: str | None) -> FetchFailed:
        """The same failure, named by the config file and field that asked for the download."""
        return FetchFailed(file, field, self.what, self.where, self.reason)


def _is_network_error(exc: BaseException) -> bool:
    return isinstance(exc, (ConnectionError, TimeoutError, socket.gaierror)) or any(
        cls.__name__ in NETWORK_ERRORS for cls in type(exc).__mro__)


def _linked(exc: BaseException) -> list[BaseException]:
    out = [exc.__cause__, exc.__context__, getattr(exc, "reason", None)]
    for arg in exc.args:
        out.append(arg)
        if isinstance(arg, list):
            out += [item[1] for item in arg if isinstance(item, tuple) and len(item) == 2]
    return [e for e in out if isinstance(e, BaseException)]


def network_reason(exc: BaseException) -> str | None:
    """The innermost failed connection in ``exc``'s chain, as its first line (the proxy's when unreachable);
    else None."""
    found, proxy, seen, stack = None, False, set(), [exc]
    while stack:
        e = stack.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        if _is_network_error(e):
            found = e
        proxy = proxy or any(cls.__name__ == "ProxyError" for cls in type(e).__mro__)
        stack += _linked(e)
    if found is None:
        return None
    text = " ".join((str(found).strip().splitlines() or [type(found).__name__])[0].split())
    return f"the proxy is unreachable: {text}" if proxy else text
