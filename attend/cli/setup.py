"""CLI handlers for setting attend up: install, uninstall, permissions, doctor.

Their context opens the spool only if the verb asks for it (``Context.for_env``): install runs before
a spool exists, uninstall may remove one, and doctor reports a refused spool as one of its checks."""

from __future__ import annotations

import sys

import click

from attend.cli.app import epilog
from attend.cli.common import emit, json_option, quiet_option, table
from attend.domain.sessions.context import Context
from attend.setup.hosts import PRIMARY
from attend.verbs import doctor as doctor_verb
from attend.verbs import install as install_verb
from attend.verbs import permissions as permissions_verb
from attend.verbs import uninstall as uninstall_verb

TARGET = click.option("--target", metavar="DIR", help=install_verb.PARAMS["target"])


def _changes_text(changes: list[install_verb.Change], verb: str) -> list[str]:
    return [f"{verb if c.action == 'write' else c.action:>9} {c.path}" for c in changes]


def _installed_text(r: install_verb.Installed) -> str:
    lines = [f"hosts: {', '.join(r.hosts)}"] if r.hosts != [PRIMARY.name] else []
    if PRIMARY.name in r.hosts:
        lines.append(_claude_installed(r))
        lines += [f"   {n}" for n in r.notes]
    for o in r.others:
        if r.dry_run:
            body = [c.diff for c in o.changes if c.diff] + [
                f"would {c.action} {c.path}" for c in o.changes if not c.diff
            ]
            lines.append("\n".join(body) or f"attend is already installed in {o.target} ({o.host}); nothing to change")
        elif not o.changed:
            lines.append(f"attend is already installed in {o.target} ({o.host}); nothing changed")
        else:
            lines += [f"installed attend into {o.target} ({o.host})", *_changes_text(o.changes, "merged")]
            lines += [f"   backup {b}" for b in o.backups]
        lines += [f"   {o.host}: {n}" for n in o.notes]
    return "\n".join(lines)


def _claude_installed(r: install_verb.Installed) -> str:
    if r.dry_run:
        diffs = [c.diff for c in r.changes if c.diff]
        files = [f"would {c.action} {c.path}" for c in r.changes if not c.diff]
        return "\n".join(diffs + files) or f"attend is already installed in {r.target}; nothing to change"
    if not r.changes:
        return f"attend is already installed in {r.target}; nothing changed"
    lines = [f"installed attend into {r.target}", *_changes_text(r.changes, "merged")]
    lines += [f"   backup {b}" for b in r.backups]
    lines.append("the guard hook is copied, not wired; see `attend permissions` and the install docs")
    return "\n".join(lines)


GIT_HOOK_HELP = (
    "Only add the lease guard to this git repository's pre-commit hook (kept: a hook already there runs "
    "first): staged files under another live session's lease warn, or refuse under leases.enforce: refuse."
)


def _git_hook(dry_run: bool, as_json: bool) -> None:
    """`attend install --git-hook`: the commit guard of attend/leases, in the repository of the cwd."""
    import json
    import os

    from attend.leases import tree
    from attend.setup.install import attend_executable

    if dry_run:
        raise click.UsageError("--git-hook writes one hook file; run it without --dry-run")
    try:
        path, done = tree.install_git_hook(os.getcwd(), attend_executable())
    except (ValueError, OSError) as e:
        click.echo(f"attend: {e}", err=True)
        sys.exit(1)
    click.echo(
        json.dumps({"hook": path, "done": done, "warnings": []})
        if as_json
        else f"pre-commit lease guard {done}: {path}"
    )


HOST = click.option("--host", "hosts", multiple=True, metavar="NAME", help=install_verb.PARAMS["hosts"])


@click.command(help=install_verb.DESCRIPTION, epilog=epilog(install_verb.EXAMPLES))
@TARGET
@click.option("--dry-run", is_flag=True, help=install_verb.PARAMS["dry_run"])
@HOST
@click.option("--git-hook", is_flag=True, help=GIT_HOOK_HELP)
@json_option
@quiet_option
def install(target: str | None, dry_run: bool, hosts: tuple[str, ...], git_hook: bool, as_json: bool) -> None:
    if git_hook:
        _git_hook(dry_run, as_json)
        return
    req = install_verb.InstallRequest(target, dry_run, hosts)
    emit(install_verb.run(Context.for_env(), req), as_json, _installed_text)


def _uninstalled_text(r: uninstall_verb.Uninstalled) -> str:
    lines = []
    if PRIMARY.name in r.hosts:
        lines = [f"withdrew attend from {r.target}" if r.changes else f"nothing of attend's in {r.target}"]
        lines += _changes_text(r.changes, "stripped")
        lines += [f"   backup {b}" for b in r.backups]
    for o in r.others:
        lines.append(
            f"withdrew attend from {o.target} ({o.host})" if o.changes else f"nothing of attend's in {o.target}"
        )
        lines += _changes_text(o.changes, "stripped")
        lines += [f"   backup {b}" for b in o.backups]
    if not r.hosts:
        lines.append("no client's folder here: nothing to withdraw")
    lines.append(f"spool {r.spool}: removed" if r.purged else f"spool left in place: {r.spool} (--purge removes it)")
    return "\n".join(lines)


@click.command(help=uninstall_verb.DESCRIPTION, epilog=epilog(uninstall_verb.EXAMPLES))
@click.option("--target", metavar="DIR", help=uninstall_verb.PARAMS["target"])
@click.option("--purge", is_flag=True, help=uninstall_verb.PARAMS["purge"])
@click.option("--host", "hosts", multiple=True, metavar="NAME", help=uninstall_verb.PARAMS["hosts"])
@click.option(
    "--yes", "-y", is_flag=True, help="Accepted for older scripts: --purge is always confirmed at the terminal."
)
@json_option
@quiet_option
def uninstall(target: str | None, purge: bool, hosts: tuple[str, ...], yes: bool, as_json: bool) -> None:
    ctx = Context.for_env()
    if purge:
        # Every message of every session and human goes: a human at a terminal confirms it there,
        # whatever --yes says (docs/architecture/sessions.md, "Who may do what").
        ctx.human(uninstall_verb.PURGE_ACTION, uninstall_verb.purge_question(ctx))
    req = uninstall_verb.UninstallRequest(target, purge, hosts)
    emit(uninstall_verb.run(ctx, req), as_json, _uninstalled_text)


def _permissions_text(p: permissions_verb.Permissions) -> str:
    yes = {True: "yes", False: "NO"}
    if not p.primary:
        gaps = [f"{h.host} {c.name}" for h in p.hosts if h.wired for c in h.checks if not c.ok]
        verdict = "ok" if p.ok else "missing: " + ", ".join(gaps)
        head = f"target {p.target} does not exist: not used here"
        return head + "".join(_host_text(h) for h in p.hosts) + f"\n{verdict}"
    rows = [[entry, yes[ok]] for entry, ok in p.allow.items()]
    rows += [
        ["Stop-hook drain", yes[p.stop_hook]],
        ["waiting Stop hook", yes[p.waiter]],
        ["compact hook", yes[p.recall]],
        ["MCP server", yes[p.mcp_server] + (f" ({p.mcp_command})" if p.mcp_command else "")],
        ["guard", ("wired, matcher " + repr(p.guard_matcher)) if p.guard else "not wired (optional)"],
        ["outbound gate", p.gate],
    ]
    gaps = p.missing + [n for n, ok in (("Stop-hook drain", p.stop_hook), ("MCP server", p.mcp_server)) if not ok]
    gaps += [f"{h.host} {c.name}" for h in p.hosts if h.wired for c in h.checks if not c.ok]
    verdict = "ok" if p.ok else "missing: " + ", ".join(gaps)
    return f"target {p.target}\n" + table(rows) + "".join(_host_text(h) for h in p.hosts) + f"\n{verdict}"


def _host_text(h: permissions_verb.HostWiring) -> str:
    state = "wired" if h.wired else "found, not wired"
    lines = [f"\n\n{h.host} {h.target} ({state})"]
    for c in h.checks:
        lines.append(f"{'ok  ' if c.ok else 'NO  '} {c.name}: {c.detail}")
        if c.fix and not c.ok:
            lines.append(f"     fix: {c.fix}")
    return "\n".join(lines)


@click.command(help=permissions_verb.DESCRIPTION, epilog=epilog(permissions_verb.EXAMPLES))
@TARGET
@json_option
def permissions(target: str | None, as_json: bool) -> None:
    result = permissions_verb.run(Context.for_env(), permissions_verb.PermissionsRequest(target))
    emit(result, as_json, _permissions_text)
    if not result.ok:
        raise SystemExit(1)  # not click.Exit: standalone_mode=False would turn it into a return value


def _doctor_text(d: doctor_verb.Doctor) -> str:
    marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "skip": "-   "}
    lines = [f"session {d.session_id or '?'} ({d.kind or 'unresolved'})"]
    for c in d.checks:
        lines.append(f"{marks[c.status]} {c.name}: {c.detail}")
        if c.fix and c.status in ("warn", "fail"):
            lines.append(f"     fix: {c.fix}")
    return "\n".join(lines)


@click.command(help=doctor_verb.DESCRIPTION, epilog=epilog(doctor_verb.EXAMPLES))
@TARGET
@json_option
def doctor(target: str | None, as_json: bool) -> None:
    result = doctor_verb.run(Context.for_env(), doctor_verb.DoctorRequest(target))
    emit(result, as_json, _doctor_text)
    if not result.ok:
        raise SystemExit(1)  # not click.Exit: standalone_mode=False would turn it into a return value
