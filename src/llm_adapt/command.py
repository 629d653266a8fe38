"""A vLLM command line as a typed value: the program, then options in order, each a flag with or
without a value. Reading or changing one option goes through here; argv and shell text are rendered
only at the edge (a process launch, a report)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Command:
    program: tuple[str, ...]  # e.g. ("vllm", "serve", MODEL) or ("python", "-m", "vllm.entrypoints.openai.api_server")
    options: tuple[tuple[str, str | None], ...]  # ("--port", "8000"), ("--enforce-eager", None), ...

    @classmethod
    def from_argv(cls, argv: list[str], program_len: int = 3) -> "Command":
        """Parse argv whose first `program_len` words are the program; a word after a flag is its value
        unless it is a flag itself."""
        program, rest, options = tuple(argv[:program_len]), list(argv[program_len:]), []
        i = 0
        while i < len(rest):
            flag = rest[i]
            value = rest[i + 1] if i + 1 < len(rest) and not rest[i + 1].startswith("--") else None
            options.append((flag, value))
            i += 1 if value is None else 2
        return cls(program, tuple(options))

    def get(self, flag: str) -> str | None:
        return next((value for name, value in self.options if name == flag), None)

    @property
    def model(self) -> str | None:
        """The model a vLLM command serves: `vllm serve MODEL`'s positional word, or --model's value."""
        return self.program[2] if self.program[:2] == ("vllm", "serve") and len(self.program) > 2 else self.get("--model")

    def as_module(self, python: str, module: str) -> "Command":
        """The same server started as `python -m module --model MODEL ...`: `vllm serve MODEL`'s arguments are the
        API server module's, the model given as --model (vllm/entrypoints/openai/api_server.py's parser is
        make_arg_parser, as `vllm serve`'s)."""
        options = self.options if self.get("--model") else (("--model", self.model), *self.options)
        return Command((python, "-m", module), tuple(options))

    def has(self, flag: str) -> bool:
        return any(name == flag for name, _ in self.options)

    def with_option(self, flag: str, value: str | None = None) -> "Command":
        """The option set to `value`: replaced in place when present, appended otherwise."""
        if self.has(flag):
            return replace(self, options=tuple((n, value if n == flag else v) for n, v in self.options))
        return replace(self, options=self.options + ((flag, value),))

    def without(self, *flags: str) -> "Command":
        return replace(self, options=tuple((n, v) for n, v in self.options if n not in flags))

    def with_program(self, *program: str) -> "Command":
        return replace(self, program=tuple(program))

    def argv(self) -> list[str]:
        out = list(self.program)
        for flag, value in self.options:
            out += [flag] if value is None else [flag, value]
        return out

    def shell(self, env: dict[str, str] | None = None) -> str:
        """Shell text: one `export` per variable, then the command with one option per line."""
        lines = [f"export {key}={shlex.quote(value)}" for key, value in (env or {}).items()]
        parts = [shlex.join(self.program)]
        parts += [flag if value is None else f"{flag} {shlex.quote(value)}" for flag, value in self.options]
        lines.append(" \\\n    ".join(parts))
        return "\n".join(lines)
