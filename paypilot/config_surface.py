"""Every environment variable the project reads, found by parsing the source (not by grep).

`env.<cast>("NAME", default=...)` and `env("NAME")` calls (the one `environ.Env` of
paypilot/settings.py), `os.environ.get/[]/setdefault` and `os.getenv` with a literal name,
anywhere in the project's own packages outside tests and migrations. A name computed at
run time (`os.environ.get(name)` with a variable) is not a setting and is not listed.
`manage.py config_report` prints them; a test compares them with docs/configuration.md.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

ENV_CASTS = frozenset(
    {"str", "bool", "int", "float", "list", "tuple", "dict", "json", "url", "path", "db", "db_url",
     "cache", "cache_url", "email", "email_url", "search_url", "decimal", "bytes", "parse_value"}
)
# Whole values hidden: keys, passwords, salts, provider credentials.
_SECRET_NAME = re.compile(r"(SECRET|PASSWORD|PASSWD|SALT|_KEY$|_KEYS$|^ANYMAIL$|CREDENTIAL|_TOKEN$|DSN$)")
# Only the password part hidden: connection URLs.
_URL_NAME = re.compile(r"_URL$")
MASK = "********"


@dataclass(frozen=True)
class EnvRead:
    name: str
    default: str | None  # the default as written in the source, None when there is none
    cast: str
    where: str  # path:line of the first read
    module: str = ""  # dotted module that reads it, where an expression default is evaluated


def _project_files(base: Path, packages: list[str] | None) -> list[Path]:
    files = [base / "manage.py"] if (base / "manage.py").is_file() else []
    for app in packages if packages is not None else settings.INSTALLED_APPS:
        package = base / app.split(".")[0]
        if not (package / "__init__.py").is_file():
            continue  # a third-party app
        for path in sorted(package.rglob("*.py")):
            parts = set(path.relative_to(base).parts)
            if parts & {"tests", "migrations"} or path.name.startswith("test_"):
                continue
            files.append(path)
    return sorted(set(files))


def _literal(node: ast.AST | None) -> str | None:
    return None if node is None else ast.unparse(node)


def _is_os_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ" and (
        isinstance(node.value, ast.Name) and node.value.id == "os"
    )


def _read_from_call(node: ast.Call) -> tuple[str, str | None, str] | None:
    func = node.func
    args = node.args
    if not args or not isinstance(args[0], ast.Constant) or not isinstance(args[0].value, str):
        return None
    name = args[0].value
    default_kw = next((k.value for k in node.keywords if k.arg == "default"), None)
    positional_default = args[1] if len(args) > 1 else None
    # env("NAME", ...) / env.str("NAME", default=...)
    if isinstance(func, ast.Name) and func.id == "env":
        return name, _literal(default_kw or positional_default), "str"
    if isinstance(func, ast.Attribute):
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id == "env" and func.attr in ENV_CASTS:
            return name, _literal(default_kw), func.attr
        if _is_os_environ(owner) and func.attr in {"get", "setdefault"}:
            return name, _literal(positional_default or default_kw), "str"
        if isinstance(owner, ast.Name) and owner.id == "os" and func.attr == "getenv":
            return name, _literal(positional_default or default_kw), "str"
    return None


def env_reads(base: Path | None = None, packages: list[str] | None = None) -> list[EnvRead]:
    """All literal environment reads of the project (its own packages among INSTALLED_APPS,
    plus manage.py), one per variable, sorted by name."""
    root = Path(base or settings.BASE_DIR)
    found: dict[str, EnvRead] = {}
    for path in _project_files(root, packages):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            read: tuple[str, str | None, str] | None = None
            if isinstance(node, ast.Call):
                read = _read_from_call(node)
            elif (
                isinstance(node, ast.Subscript) and _is_os_environ(node.value)
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
                and isinstance(node.ctx, ast.Load)
            ):
                read = (node.slice.value, None, "str")
            if read is None:
                continue
            name, default, cast = read
            relative = path.relative_to(root)
            where = f"{relative}:{getattr(node, 'lineno', 0)}"
            module = ".".join(relative.with_suffix("").parts)
            if name not in found:
                found[name] = EnvRead(name, default, cast, where, module)
    return sorted(found.values(), key=lambda r: r.name)


_NON_SECRET_CASTS = frozenset({"bool", "int", "float", "decimal"})


def is_secret(name: str, cast: str = "str") -> bool:
    """A name that says key/secret/password/salt, unless its type cannot hold one."""
    return bool(_SECRET_NAME.search(name)) and cast not in _NON_SECRET_CASTS


def default_text(default: str | None) -> str:
    """A source default as an operator reads it: literals evaluated, expressions verbatim."""
    if default is None:
        return ""
    try:
        value = ast.literal_eval(default)
    except (ValueError, SyntaxError):
        return default
    return value if isinstance(value, str) else repr(value)


def default_value(read: EnvRead) -> str:
    """The default as it takes effect: a literal as written, an expression (a path under the
    install, an f-string) evaluated in the module that reads it; the source text only when
    that cannot be done. The expressions are this project's own source, never input."""
    text = default_text(read.default)
    if read.default is None or text != read.default or not read.module:
        return text
    try:
        namespace = vars(importlib.import_module(read.module))
        value = eval(compile(ast.Expression(ast.parse(read.default, mode="eval").body), read.where, "eval"),
                     dict(namespace))
    except Exception:  # noqa: BLE001 - an expression that needs run-time state stays as written
        return text
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    return "" if value is None else str(value)


def mask(name: str, value: str, cast: str = "str") -> str:
    """The value as safe to print: secrets hidden whole, URL passwords hidden."""
    if value == "":
        return ""
    if is_secret(name, cast):
        return MASK
    if _URL_NAME.search(name) and "://" in value:
        parts = urlsplit(value)
        if parts.password:
            host = parts.hostname or ""
            netloc = f"{parts.username}:{MASK}@{host}" + (f":{parts.port}" if parts.port else "")
            return urlunsplit(parts._replace(netloc=netloc))
    return value


def dotenv_names(base: Path | None = None) -> set[str]:
    path = Path(base or settings.BASE_DIR) / ".env"
    if not path.is_file():
        return set()
    names = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            names.add(line.split("=", 1)[0].removeprefix("export ").strip())
    return names


@dataclass(frozen=True)
class ReportRow:
    name: str
    source: str  # "environment", ".env" or "default"
    value: str  # masked
    default: str | None
    secret: bool


def config_report_rows(environ: dict[str, str] | None = None) -> list[ReportRow]:
    env = os.environ if environ is None else environ
    from_file = dotenv_names()
    rows = []
    for read in env_reads():
        if read.name in env:
            source = ".env" if read.name in from_file else "environment"
            value = mask(read.name, env[read.name], read.cast)
        else:
            source, value = "default", mask(read.name, default_value(read), read.cast)
        rows.append(ReportRow(read.name, source, value, read.default, is_secret(read.name, read.cast)))
    return rows
