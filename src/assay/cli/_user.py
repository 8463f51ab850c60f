"""``assay user`` and ``assay token``: signing in and out, users, and access tokens."""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli._common import (
    CsvOption,
    check_formats,
    client,
    console,
    esc,
    fail,
    listing_table,
    print_json,
    print_table,
    request,
    when,
)

if TYPE_CHECKING:
    from assay import rest

# Their help: assay.cli._app.SUBCOMMANDS.
app = typer.Typer(no_args_is_help=True)
tokens = typer.Typer(no_args_is_help=True)

JsonOption = Annotated[bool, typer.Option("--json", help="print JSON")]


def read_password(prompt: str, *, confirm: bool = False) -> str:
    """A password typed at a hidden prompt, or the first line of stdin when it is not a
    terminal (``printf '%s\\n' "$PASSWORD" | assay user login me``)."""
    if not sys.stdin.isatty():
        line = sys.stdin.readline()
        if not line:
            fail(f"{prompt.lower()} expected on stdin (it is not a terminal)")
        return line.rstrip("\r\n")
    value: str = typer.prompt(prompt, hide_input=True, confirmation_prompt=confirm)
    return value


def named(username: str) -> str:
    """``username`` as given for a user the command acts on; an empty or blank one ends the
    command (it would otherwise name no one, or the wrong route, on the master)."""
    if not username.strip():
        fail("username: must not be empty")
    return username


@app.command()
def login(username: Annotated[str, typer.Argument(help="who to sign in as")]) -> None:
    """Sign in to the master; the session is kept for later commands (30 days)."""
    from assay import rest
    from assay.client import StoredLogin, TokenStore

    named(username)
    body = request(rest.Login, username=username, password=read_password("Password"))
    c = client()
    session = c.login(body.username, body.password)
    TokenStore().put(c.url, StoredLogin(session.user.username, session.token))
    console.print(f"signed in to {c.url} as {session.user.username}")


@app.command()
def logout() -> None:
    """End this session on the master and forget it here."""
    from assay.client import TokenStore
    from assay.errors import Unauthorized

    c = client()
    store = TokenStore()
    stored = store.get(c.url)
    if stored is None:
        console.print(f"not signed in to {c.url}")
        return
    # Expired or revoked already: forgetting it is all that is left.
    with contextlib.suppress(Unauthorized):
        c.logout()
    store.drop(c.url)
    console.print(f"signed out of {c.url} ({stored.username})")


@app.command()
def whoami(as_json: JsonOption = False) -> None:
    """The user this command line is signed in as."""
    user = client().me()
    if as_json:
        print_json(user)
    else:
        console.print(f"{user.username}{' (admin)' if user.admin else ''}")


def _users_table(users: list[rest.User], as_csv: bool = False) -> None:
    table = listing_table("ID", "Username", "Admin", "Active", "Created", empty="No users.")
    for user in users:
        table.add_row(
            str(user.id),
            esc(user.username),
            "yes" if user.admin else "",
            "yes" if user.active else "no",
            when(user.created_at),
        )
    print_table(table, as_csv)


@app.command("list")
def list_(as_json: JsonOption = False, as_csv: CsvOption = False) -> None:
    """Every user."""
    check_formats(as_json, as_csv)
    users = client().users()
    if as_json:
        print_json(users)
    else:
        _users_table(users, as_csv)


@app.command()
def create(
    username: Annotated[str, typer.Argument(help="the new user's name")],
    admin: Annotated[bool, typer.Option("--admin", help="make them an admin")] = False,
) -> None:
    """Create a user (admins only); their password is asked for, or read from stdin."""
    from assay import rest

    named(username)
    password = read_password("New user's password", confirm=True)
    body = request(rest.UserCreate, username=username, password=password, admin=admin)
    user = client().create_user(body)
    console.print(f"created user {user.username}{' (admin)' if user.admin else ''}")


def _set_active(username: str, active: bool) -> None:
    from assay import rest

    user = client().change_user(named(username), request(rest.UserChange, active=active))
    console.print(f"{user.username} is now {'active' if user.active else 'deactivated'}")


@app.command()
def activate(username: Annotated[str, typer.Argument()]) -> None:
    """Let a deactivated user sign in again (admins only)."""
    _set_active(username, True)


@app.command()
def deactivate(username: Annotated[str, typer.Argument()]) -> None:
    """Stop a user from signing in, and revoke their sessions and tokens (admins only)."""
    _set_active(username, False)


@app.command("change-password")
def change_password(
    username: Annotated[
        str | None, typer.Argument(help="whose (default: yours; others' for admins)")
    ] = None,
) -> None:
    """Change a password; the user's other sessions are signed out."""
    from assay import rest

    c = client()
    # Only a name left out means "mine": an empty one is a mistake, not the caller's own.
    name = named(username) if username is not None else c.me().username
    password = read_password("New password", confirm=True)
    c.change_user(name, request(rest.UserChange, password=password))
    console.print(f"changed the password of {name}")


@tokens.command("create")
def create_token(
    description: Annotated[str, typer.Option(help="what the token is for")] = "",
    lifespan_days: Annotated[
        int | None, typer.Option("--lifespan-days", help="days until it expires (default: never)")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """A long-lived access token of yours, shown this once: give it to scripts as
    ASSAY_USER_TOKEN."""
    from assay import rest

    body = request(rest.TokenCreate, description=description, lifespan_days=lifespan_days)
    made = client().create_token(body)
    if as_json:
        print_json(made)
        return
    typer.echo(f"token {made.info.id} (shown only now; set it as ASSAY_USER_TOKEN):", err=True)
    typer.echo(made.token)


@tokens.command("list")
def list_tokens(
    all_users: Annotated[
        bool, typer.Option("--all-users", help="every user's (admins only)")
    ] = False,
    as_json: JsonOption = False,
    as_csv: CsvOption = False,
) -> None:
    """Your access tokens (never the tokens themselves)."""

    check_formats(as_json, as_csv)
    listed = client().tokens(all_users=all_users)
    if as_json:
        print_json(listed)
        return
    table = listing_table(
        "ID", "User", "Description", "Created", "Expires", "Revoked", empty="No tokens."
    )
    for token in listed:
        table.add_row(
            str(token.id),
            esc(token.username),
            esc(token.description),
            when(token.created_at),
            when(token.expires_at) or "never",
            when(token.revoked_at),
        )
    print_table(table, as_csv)


@tokens.command("revoke")
def revoke_token(token_id: Annotated[int, typer.Argument(help="the token's id")]) -> None:
    """Revoke an access token: requests carrying it are refused from now on."""
    revoked = client().revoke_token(token_id)
    console.print(f"revoked token {revoked.id} of {revoked.username}")
