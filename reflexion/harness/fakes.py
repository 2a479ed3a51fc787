"""Fake chat models and a scripted ALFWorld game, for tests and for measuring the loop without a
model: scripted replies that record every prompt, replies computed by a rule, and an instant
fixed reply with fixed token counts."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from reflexion.models.chat import OneReplyChatModel


class FakeChatModel(OneReplyChatModel):
    """What the fakes share: a reply computed by :meth:`reply`, and the token counts it reports
    (``usage``: prompt and completion tokens per call; ``None`` reports none), and the cost in
    US dollars it reports per call as a provider may (``cost``, in ``response_metadata``;
    ``None`` reports none)."""

    usage: tuple[int, int] | None = None
    cost: float | None = None

    @property
    def _llm_type(self) -> str:
        return "fake"

    def reply(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> str:
        raise NotImplementedError

    def _reply(self, messages: list[BaseMessage], stop: list[str] | None, **kw: Any) -> AIMessage:
        counts = None
        if self.usage is not None:
            prompt, completion = self.usage
            counts = UsageMetadata(
                input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion
            )
        reported = {} if self.cost is None else {"cost": self.cost}
        return AIMessage(
            content=self.reply(messages, stop, **kw),
            usage_metadata=counts,
            response_metadata=reported,
        )

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """``ainvoke``'s path: answered on the event loop (a fake never blocks), as the sync
        one answers."""
        message = self._reply(list(messages), stop, **kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])


class ScriptedChatModel(FakeChatModel):
    """Returns ``replies`` in order (the last one repeats) and keeps the prompts it saw."""

    replies: list[str]
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    kwargs_seen: list[dict[str, Any]] = Field(default_factory=list)
    usage: tuple[int, int] | None = (10, 5)

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def reply(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> str:
        index = min(len(self.prompts), len(self.replies) - 1)
        self.prompts.append(messages)
        self.kwargs_seen.append({"stop": stop, **kwargs})
        return self.replies[index]

    def prompt_text(self, call: int) -> str:
        """All message contents of one recorded call, joined."""
        return "\n".join(m.text for m in self.prompts[call])


class SeededScriptedChatModel(ScriptedChatModel):
    """A scripted model that takes a ``seed`` call option, as the embedded model does (its
    ``kwargs_seen`` then show the seeds the nodes drew with)."""

    seed: int | None = None


class RuleChatModel(FakeChatModel):
    """Replies with ``rule(messages)``; thread-safe, for concurrent runs. ``rule`` may raise
    to simulate a failing provider or an interruption."""

    rule: Callable[[list[BaseMessage]], str]
    calls: int = 0
    lock: Any = Field(default_factory=threading.Lock, exclude=True)

    @property
    def _llm_type(self) -> str:
        return "rule-fake"

    def reply(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> str:
        with self.lock:
            self.calls += 1
        return self.rule(messages)


class ScriptedGame:
    """A scripted ALFWorld game for unit tests (the :class:`Environment` interface).

    One room: ``countertop 1`` holds a ``mug 1``, ``cabinet 1`` is closed, ``shelf 1`` is
    empty. The task is to put the mug on the shelf; ``move mug 1 to shelf 1`` while holding
    it wins and ends the episode (``move mug 1 to shelf 1``, the engine's phrasing). Anything
    else the room does not allow: ``Nothing happens.``
    Counts resets and steps so tests can see replays.
    """

    TASK = "Your task is to: put some mug on shelf."
    ROOM = (
        "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, "
        "a countertop 1, and a shelf 1."
    )

    def __init__(self) -> None:
        self.resets = 0
        self.steps: list[str] = []
        self.closed = False
        self._reset_state()

    def _reset_state(self) -> None:
        self.at = ""
        self.held: str | None = None
        self.places = {"countertop 1": ["mug 1"], "cabinet 1": [], "shelf 1": []}
        self.cabinet_open = False
        self._won = False

    def reset(self, game: Any) -> str:
        self.resets += 1
        self.game = game
        self._reset_state()
        return f"{self.ROOM}\n{self.TASK}"

    def _contents(self, place: str) -> str:
        items = self.places[place]
        return ", ".join(f"a {i}" for i in items) if items else "nothing"

    def step(self, command: str) -> str:
        if self._won:
            raise AssertionError("step after the episode ended")
        self.steps.append(command)
        words = command.split()
        if command.startswith("go to "):
            place = command[len("go to ") :]
            if place not in self.places:
                return "Nothing happens."
            self.at = place
            if place == "cabinet 1" and not self.cabinet_open:
                return "You arrive at cabinet 1. The cabinet 1 is closed."
            return f"You arrive at {place}. On the {place}, you see {self._contents(place)}."
        if command == "open cabinet 1" and self.at == "cabinet 1":
            self.cabinet_open = True
            inside = self._contents("cabinet 1")
            return f"You open the cabinet 1. The cabinet 1 is open. In it, you see {inside}."
        if words[:1] == ["take"] and " from " in command and self.held is None:
            obj, place = command[len("take ") :].split(" from ", 1)
            if place == self.at and obj in self.places.get(place, []):
                self.places[place].remove(obj)
                self.held = obj
                return f"You pick up the {obj} from the {place}."
        if words[:1] == ["move"] and " to " in command:
            obj, place = command[len("move ") :].split(" to ", 1)
            if obj == self.held and place == self.at:
                self.places[place].append(obj)
                self.held = None
                self._won = obj == "mug 1" and place == "shelf 1"
                return f"You move the {obj} to the {place}."
        if command == "inventory":
            return (
                f"You are carrying: a {self.held}."
                if self.held
                else "You are not carrying anything."
            )
        return "Nothing happens."

    @property
    def admissible_commands(self) -> list[str]:
        return ["inventory", *(f"go to {p}" for p in self.places)]

    @property
    def won(self) -> bool:
        return self._won

    @property
    def done(self) -> bool:
        return self._won

    def close(self) -> None:
        self.closed = True


class InstantChatModel(FakeChatModel):
    """A chat model that answers at once with a fixed reply (no I/O, deterministic) and
    reports a fixed token count, so a run measures the graph and not a model."""

    text: str
    usage: tuple[int, int] | None = (100, 20)

    @property
    def _llm_type(self) -> str:
        return "perf-instant"

    def reply(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> str:
        return self.text
