"""The one fake chat client every app's tests put at the seam (`dunning.llm.build_chat_client`)."""

from __future__ import annotations

from collections.abc import Callable

from dunning.llm import ChatReply


class FakeChat:
    """Stands in for the model: answers with whatever `respond(system, user)` returns and
    records each call; token counts are the test's to choose (they drive the metered cost)."""

    model = "gpt-4o-mini"

    def __init__(self, respond: Callable[[str, str], str], *, input_tokens: int = 900,
                 output_tokens: int = 200) -> None:
        self.respond = respond
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.calls: list[dict[str, str]] = []

    def complete(self, *, system: str, user: str, max_tokens: int) -> ChatReply:
        self.calls.append({"system": system, "user": user})
        return ChatReply(text=self.respond(system, user), input_tokens=self.input_tokens,
                         output_tokens=self.output_tokens)
