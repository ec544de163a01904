"""Whether an endpoint answers at all, checked before a run starts, with nothing but asyncio: the lean client's
probe. An unreachable URL fails within `connect_timeout_s` (a refused port at once); a server that takes the
connection and never answers, within `stall_timeout_s`."""

from __future__ import annotations

import asyncio
import ssl
from urllib.parse import urlsplit

from ..border.limits import request_target
from ..errors import TargetError
from ..redaction import mask_url

__all__ = ["answers"]

async def answers(target) -> None:
    """A TCP (+ TLS) connect bounded by the connect timeout, then a GET of /models whose first byte must come
    within the stall timeout, whatever its status (/models may not exist there). No credentials are sent: that
    the server answers is what is checked, not what it says."""
    parts = urlsplit(target.base_url)
    https = parts.scheme == "https"
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if https else 80)
    where = mask_url(target.base_url)
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=ssl.create_default_context() if https else None),
            target.connect_timeout_s)
    except TimeoutError:
        raise TargetError(f"cannot reach {where}: no connection within connect_timeout_s "
                          f"({target.connect_timeout_s:g} s)") from None
    except OSError as exc:
        raise TargetError(f"cannot reach {where}: {exc.strerror or exc}") from None
    try:
        writer.write(f"GET {request_target(target.base_url, '/models')} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                     "Connection: close\r\n\r\n".encode("latin-1"))
        await writer.drain()
        first = await asyncio.wait_for(reader.read(1), target.stall_timeout_s)
    except TimeoutError:
        raise TargetError(f"cannot reach {where}: connected, but no answer within stall_timeout_s "
                          f"({target.stall_timeout_s:g} s)") from None
    except OSError as exc:
        raise TargetError(f"cannot reach {where}: {exc.strerror or exc}") from None
    finally:
        writer.close()
    if not first:
        raise TargetError(f"cannot reach {where}: the server closed the connection without answering")
