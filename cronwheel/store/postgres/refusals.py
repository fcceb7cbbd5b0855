"""Which failed connections a retry cannot cure: the server answered and refused this node.

libpq reports a failed connection as text only: psycopg's ``OperationalError`` then has no
``sqlstate`` (there is no result to read it from), so the server's reasons are told apart by
their messages, one per host tried (``connection to server at "H", port P failed: REASON``).
A connection is refused for good when every host tried refused it for one of the reasons
below (authentication, role, database); one host that was unreachable, starting, shutting
down or full (``too many clients``) leaves it transient, since a restart may reach another.
A server that writes its messages in another language than English (``lc_messages``) is
not recognised: its refusals stay transient, as every connection failure was before.
"""

from __future__ import annotations

import re

#: the server's (English) reasons that a restart would meet again, and what to check
_LASTING: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"authentication failed for user|no pg_hba\.conf entry for|fe_sendauth: no password supplied"),
     "check the user and password of --store (or PGPASSWORD, PGPASSFILE) and the server's pg_hba.conf"),
    (re.compile(r'role ".*" (?:does not exist|is not permitted to log in)'),
     "check the user of --store: the server has no such role, or it may not log in"),
    (re.compile(r'database ".*" does not exist'),
     "check the database name of --store, or create it (CREATE DATABASE … OWNER the user)"),
    (re.compile(r'permission denied for database'),
     "the user lacks the CONNECT privilege on the database (GRANT CONNECT ON DATABASE …)"),
)
_REASON = re.compile(r"connection to server (?:at|on) .*? failed: (.*)")
_SEVERITY = re.compile(r"^(?:FATAL|ERROR):\s+")


def lasting_refusal(message: str) -> str | None:
    """``message``, a failed connection's text, as one line naming the server's refusal and
    what to check, when every host tried refused it for good; None when it may pass."""
    reasons = [_SEVERITY.sub("", m.group(1).strip()) for m in _REASON.finditer(message)]
    advice: list[str] = []
    for reason in reasons:
        found = next((hint for pattern, hint in _LASTING if pattern.search(reason)), None)
        if found is None:
            return None
        if found not in advice:
            advice.append(found)
    if not reasons:
        return None
    return f"the server refused the connection: {reasons[0]}; {'; '.join(advice)}"
