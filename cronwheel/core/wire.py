"""The bounds of the values that cross the worker wire (``core.limits``), as types: the core records that travel
between the daemon and its workers (``model.Grant``, ``records.Completion``) are msgspec
structs whose fields carry these bounds, so that one compiled decoder (worker/framing.py)
checks a whole frame in one call. Declaring them is pure data: the codec, and msgpack, stay
in ``worker/``.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from cronwheel.core.limits import MAX_FRAME_BYTES, MAX_FRAME_ID_CHARS

#: an id (execution, job, worker), a tenant: 1..MAX_FRAME_ID_CHARS characters
Id = Annotated[str, Meta(min_length=1, max_length=MAX_FRAME_ID_CHARS)]
#: a counter or an epoch: never negative
Count = Annotated[int, Meta(ge=0)]
#: seconds: positive and finite (NaN fails ``gt``; infinity fails ``le``)
Seconds = Annotated[float, Meta(gt=0, le=1e15)]
#: a text a result carries (error, output tail): bounded by the frame
Text = Annotated[str, Meta(max_length=MAX_FRAME_BYTES)]
#: an entry of an HTTP allow-list (``core.tenants.normalise_host``): a host name, ``*.domain``, an IP address
HostEntry = Annotated[str, Meta(min_length=1, max_length=253)]
