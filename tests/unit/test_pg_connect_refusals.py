"""Which failed PostgreSQL connections are refused for good: libpq's text, one reason per
host tried (psycopg's error has no sqlstate for them). The texts are libpq 17's, as psycopg
3.3 words a multi-host failure."""

from __future__ import annotations

from cronwheel.store.postgres.refusals import lasting_refusal

AT = 'connection to server at "10.0.0.1", port 5432 failed: '
OTHER = 'connection to server at "10.0.0.2", port 5432 failed: '


def multi(*reasons: str) -> str:
    hosts = [AT, OTHER]
    lines = [f"connection failed: {hosts[-1]}{reasons[-1]}", "Multiple connection attempts failed. All failures were:"]
    lines += [f"- host: 'h', port: '5432', hostaddr: 'h': connection failed: {h}{r}" for h, r in zip(hosts, reasons, strict=True)]
    return "\n".join(lines)


def test_the_server_s_refusals_are_lasting_and_say_what_to_check() -> None:
    found = lasting_refusal(f'connection failed: {AT}FATAL:  password authentication failed for user "cw"')
    assert found == ('the server refused the connection: password authentication failed for user "cw"; check the '
                     "user and password of --store (or PGPASSWORD, PGPASSFILE) and the server's pg_hba.conf")
    for reason, hint in [
        ('FATAL:  no pg_hba.conf entry for host "10.0.0.9", user "cw", database "cw", no encryption', "pg_hba.conf"),
        ('FATAL:  Peer authentication failed for user "cw"', "password"),
        ("fe_sendauth: no password supplied", "password"),
        ('FATAL:  role "cw" does not exist', "no such role"),
        ('FATAL:  role "cw" is not permitted to log in', "may not log in"),
        ('FATAL:  database "cw" does not exist', "CREATE DATABASE"),
        ('FATAL:  permission denied for database "cw"', "GRANT CONNECT"),
    ]:
        found = lasting_refusal(f"connection failed: {AT}{reason}\nDETAIL:  whatever")
        assert found is not None and hint in found and reason.removeprefix("FATAL:  ") in found, (reason, found)
    assert lasting_refusal(multi('FATAL:  database "cw" does not exist', 'FATAL:  role "cw" does not exist')) == (
        'the server refused the connection: role "cw" does not exist; check the user of --store: the server has '
        "no such role, or it may not log in; check the database name of --store, or create it (CREATE DATABASE "
        "… OWNER the user)")


def test_what_may_pass_is_not_lasting() -> None:
    for reason in [
        "Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?",
        "FATAL:  the database system is starting up",
        "FATAL:  sorry, too many clients already",
        'FATAL:  too many connections for role "cw"',
        "timeout expired",
        'FATAL:  database "cw" is not currently accepting connections',
        "FATAL:  la autentificación password falló para el usuario «cw»",  # not understood: may pass
    ]:
        assert lasting_refusal(f"connection failed: {AT}{reason}") is None, reason
    # one host refused for good, another did not answer: a restart may reach a better one
    assert lasting_refusal(multi('FATAL:  database "cw" does not exist', "Connection refused")) is None
    assert lasting_refusal("server closed the connection unexpectedly") is None
    assert lasting_refusal("") is None
