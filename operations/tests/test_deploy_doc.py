"""Every command in docs/deploy.md is run by scripts/deploy_smoke.sh (which .ci/run runs
where PostgreSQL is reachable): a command or an option added to one must reach the other."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)


def doc_commands() -> list[list[str]]:
    commands = []
    for block in _BLOCK.findall((ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")):
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith(("#", "export ")):
                commands.append(shlex.split(line.split(" < ")[0]))
    return commands


def key_and_flags(words: list[str]) -> tuple[str, list[str]]:
    if words[0] in {"python", ".venv/bin/python", "$PY"} and words[1] == "manage.py":
        head = f"manage.py {words[2]}"
        rest = words[3:]
        if rest and not rest[0].startswith("-") and words[2] in {"tenants", "tokens"}:
            head += f" {rest[0]}"
    else:
        head, rest = words[0], words[1:]
    flags = [w.split("=")[0] for w in rest if w.startswith("--")]
    return head, flags


def test_every_documented_command_is_run_by_the_smoke_script():
    script = (ROOT / "scripts" / "deploy_smoke.sh").read_text(encoding="utf-8").splitlines()
    commands = doc_commands()
    assert len(commands) >= 15
    missing = []
    for words in commands:
        head, flags = key_and_flags(words)
        if not any(head in line and all(flag in line for flag in flags) for line in script):
            missing.append(" ".join(words))
    assert not missing, f"in docs/deploy.md but not run by scripts/deploy_smoke.sh: {missing}"
