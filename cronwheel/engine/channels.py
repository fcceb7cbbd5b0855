"""How a notification reaches someone: a signed webhook, an email, or a command.

Each ``send_*`` either returns (delivered) or raises ``DeliveryError`` with a one-line
reason (the deliverer retries it with backoff, then dead-letters it). None of them blocks
the event loop: HTTP is aiohttp, SMTP and sendmail run in a thread, commands are
subprocesses with a timeout.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import smtplib
import ssl
import subprocess
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any
from urllib.parse import unquote, urlsplit

from cronwheel import __version__
from cronwheel.core import notify as nt
from cronwheel.core import signing
from cronwheel.core.config import inherited_environment
from cronwheel.core.tenants import HostAllow, host_allowed
from cronwheel.core.words import counted


class DeliveryError(Exception):
    """A delivery attempt failed; the message says why (it is stored and shown)."""


class ChannelConfigError(ValueError):
    """The daemon's mail settings are malformed (refused at start-up)."""


def body_bytes(n: nt.Notification) -> bytes:
    return json.dumps(n.body, separators=(",", ":"), ensure_ascii=False).encode()


def webhook_headers(n: nt.Notification, body: bytes, now_s: int) -> dict[str, str]:
    assert n.rule.secret is not None
    return {
        "Content-Type": "application/json",
        "User-Agent": f"cronwheel/{__version__}",
        signing.SIGNATURE_HEADER: signing.sign(n.rule.secret, now_s, body),
        "Cronwheel-Notification-Id": n.notification_id,
        "Cronwheel-Event": n.event,
        "Cronwheel-Attempt": str(n.attempt),
    }


#: of a webhook's answer only its status counts: at most this much of its body is read (so that
#: a small answer leaves the connection fit for reuse), never all of it, which a receiver that
#: streams without end (or a gzip bomb, inflated as read) would make fill the daemon's memory
WEBHOOK_ANSWER_READ = 64 * 1024


async def send_webhook(session: Any, n: nt.Notification, allow: HostAllow, now_s: int, timeout_s: float) -> None:
    """POST the notification's JSON, signed; any 2xx is delivered (the answer's body is not
    read past ``WEBHOOK_ANSWER_READ``). The tenant's HTTP
    allow-list is checked at delivery time too: a list narrowed since the rule was saved
    is obeyed (the notification is then refused, not sent)."""
    import aiohttp

    from cronwheel.worker.httpfailures import http_failure

    url = n.rule.url or ""
    host = urlsplit(url).hostname or ""
    if not host_allowed(host, allow):
        empty = " (it is empty: no host)" if allow == () else ""
        raise DeliveryError(f"{host!r} is not in tenant {n.tenant!r}'s HTTP allow-list{empty}")
    body = body_bytes(n)
    try:
        async with session.post(url, data=body, headers=webhook_headers(n, body, now_s),
                                timeout=aiohttp.ClientTimeout(total=timeout_s), allow_redirects=False) as resp:  # fmt: skip
            read = 0
            async for chunk in resp.content.iter_chunked(16 * 1024):
                read += len(chunk)
                if read >= WEBHOOK_ANSWER_READ:
                    break  # the rest is left unread: leaving the block closes the connection
            if not 200 <= resp.status < 300:
                raise DeliveryError(f"webhook answered HTTP {resp.status}")
    except aiohttp.ClientError as exc:
        raise DeliveryError(f"webhook: {http_failure(exc)}") from None
    except TimeoutError:
        raise DeliveryError(f"webhook: no answer within {timeout_s:g} s") from None


# ---------------------------------------------------------------- email


@dataclass(frozen=True)
class MailConfig:
    """``--smtp-url smtp://user:pass@host:587`` (STARTTLS when the server offers it, or
    always with ``?starttls=require``), ``smtps://`` (TLS from the start), or ``--sendmail
    /usr/sbin/sendmail``; ``--mail-from`` is the sender."""

    sender: str
    host: str | None = None
    port: int = 25
    username: str | None = None
    password: str | None = None
    tls: str = "opportunistic"  #: opportunistic (STARTTLS if offered), require, implicit, none
    sendmail: str | None = None

    @classmethod
    def parse(cls, smtp_url: str | None, sendmail: str | None, sender: str | None) -> MailConfig | None:
        if smtp_url is None and sendmail is None:
            return None
        sender = sender or f"cronwheel@{os.uname().nodename}"
        if sendmail is not None:
            # refused at the start, not at the first failure's email (possibly months later)
            found = shutil.which(sendmail)
            if found is None:
                raise ChannelConfigError(f"--sendmail: {sendmail!r} is not an executable program (give its path, e.g. /usr/sbin/sendmail)")
            return cls(sender=sender, sendmail=found)
        assert smtp_url is not None
        parts = urlsplit(smtp_url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ChannelConfigError(f"--smtp-url must be smtp://[user:pass@]host[:port] or smtps://…, not {smtp_url!r}")
        query = dict(p.split("=", 1) for p in parts.query.split("&") if "=" in p)
        tls = "implicit" if parts.scheme == "smtps" else {"require": "require", "none": "none"}.get(
            query.get("starttls", ""), "opportunistic")  # fmt: skip
        try:
            port = parts.port or (465 if parts.scheme == "smtps" else 25)
        except ValueError as exc:
            raise ChannelConfigError(f"--smtp-url: {exc}") from None
        return cls(
            sender=sender, host=parts.hostname, port=port,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None, tls=tls,
        )


def email_message(n: nt.Notification, sender: str) -> EmailMessage:
    b = n.body
    what = b.get("jobName") or b.get("jobId")
    subject = f"[cronwheel] {n.event}: {what}"
    if n.event == "held":
        subject = f"[cronwheel] {counted(int(b.get('heldBack') or 0), 'notification')} held back for {what}"
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = ", ".join(n.rule.to)
    msg["Subject"] = subject
    msg["Message-ID"] = f"<{n.notification_id.replace('@', '.').replace(':', '.')}@cronwheel>"
    lines = [f"{k}: {v}" for k, v in b.items() if k != "output" and v is not None]
    if b.get("output"):
        lines += ["", "output (tail):", str(b["output"])]
    msg.set_content("\n".join(lines) + "\n")
    return msg


def _smtp_send(config: MailConfig, msg: EmailMessage, timeout_s: float) -> None:
    assert config.host is not None
    context = ssl.create_default_context()
    if config.tls == "implicit":
        client: smtplib.SMTP = smtplib.SMTP_SSL(config.host, config.port, timeout=timeout_s, context=context)
    else:
        client = smtplib.SMTP(config.host, config.port, timeout=timeout_s)
    with client:
        client.ehlo()
        if config.tls in ("opportunistic", "require"):
            if client.has_extn("starttls"):
                client.starttls(context=context)
                client.ehlo()
            elif config.tls == "require":
                raise DeliveryError(f"SMTP relay {config.host}:{config.port} does not offer STARTTLS")
        if config.username is not None:
            client.login(config.username, config.password or "")
        client.send_message(msg)


def _sendmail(config: MailConfig, msg: EmailMessage, timeout_s: float) -> None:
    assert config.sendmail is not None
    proc = subprocess.run([config.sendmail, "-t", "-i"], input=msg.as_bytes(), capture_output=True,
                          timeout=timeout_s, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise DeliveryError(f"sendmail exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-200:]}")


async def send_email(config: MailConfig | None, n: nt.Notification, timeout_s: float) -> None:
    """Mail the notification. Its recipients were checked against the tenant's allow-list when
    a tenant saved the rule; not again here, unlike a webhook's host: a tenant's default rules
    are an admin's, who may name any address (an operator's own on-call list, say), and the
    notification does not say whose rule it is."""
    if config is None:
        raise DeliveryError("no mail transport configured (cronwheel serve --smtp-url or --sendmail)")
    if (routed := nt.routed_recipient(n.rule)) is not None:  # a rule saved before it was refused
        raise DeliveryError(f"email: {routed[0][:100]!r} is not an email address: {routed[1]}")
    msg = email_message(n, config.sender)
    send = _sendmail if config.sendmail is not None else _smtp_send
    try:
        await asyncio.to_thread(send, config, msg, timeout_s)
    except DeliveryError:
        raise
    except (OSError, smtplib.SMTPException, subprocess.SubprocessError) as exc:
        raise DeliveryError(f"email: {type(exc).__name__}: {exc}") from None


# ---------------------------------------------------------------- command


async def send_command(n: nt.Notification, env: dict[str, str], timeout_s: float) -> None:
    """Run the rule's command with ``sh -c`` in a process group of its own, the
    notification's JSON on stdin and in CRONWHEEL_NOTIFICATION; exit 0 is delivered."""
    assert n.rule.command is not None
    body = body_bytes(n)
    proc_env = {**inherited_environment(os.environ), **env, "CRONWHEEL_NOTIFICATION": body.decode(), "CRONWHEEL_EVENT": n.event,
                "CRONWHEEL_NOTIFICATION_ID": n.notification_id, "CRONWHEEL_JOB_ID": n.job_id}  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", n.rule.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE, env=proc_env, start_new_session=True,
    )
    try:
        _, err = await asyncio.wait_for(proc.communicate(body), timeout_s)
    except TimeoutError:
        with_group = os.getpgid(proc.pid) if proc.returncode is None else None
        if with_group is not None:
            os.killpg(with_group, signal.SIGKILL)
        await proc.wait()
        raise DeliveryError(f"command did not finish within {timeout_s:g} s") from None
    if proc.returncode != 0:
        raise DeliveryError(f"command exited {proc.returncode}: {err.decode(errors='replace')[-200:].strip()}")
