"""Multi-turn sessions: a user keeps a conversation and resends the growing history.

A :class:`SessionSource` asks a *turn provider* for the next user message and sends the
system prompt, all earlier user messages, the server's actual replies and the new user
message. ``observe`` appends the reply; a failed request, a missing ``observe``, the
last turn, or a history that would no longer fit ``max_model_len`` ends the session and
the next request starts a new one. The pause between turns is the user's (``--think-time``,
drawn by the closed-loop user before every request but its first), not the session's.

Target input lengths are exact for the parts the workload wrote (system and user
messages) and count each reply with the approximate rule (word and punctuation pieces):
exact against the simulator, an estimate against a real model, whose tokenizer would
have to run per request to do better.

Providers: :class:`SyntheticTurns` (lengths drawn per turn from the profile: the sampled
input length is the new user message) and ``datasets.DatasetTurns`` (the user turns of a
dataset conversation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from llm_locust.config.jsontypes import JsonObject
from llm_locust.workload.base import RequestSpec
from llm_locust.workload.prefix import PrefixChoice
from llm_locust.workload.specs import make_spec, stream_rng, user_text
from llm_locust.workload.tokenizer import approx_count

if TYPE_CHECKING:
    import numpy as np

    from llm_locust.workload.distributions import LengthSample
    from llm_locust.workload.limits import LengthGuard
    from llm_locust.workload.prefix import BlockPrefix, NoPrefix, SharedPrefix
    from llm_locust.workload.prompts import PromptBuilder

__all__ = ["SessionConfig", "SessionSource", "SyntheticTurns", "Turn"]


@dataclass(frozen=True)
class Turn:
    user: str
    user_tokens: int
    output_tokens: int
    info: JsonObject = field(default_factory=dict)
    system: str | None = None  # on a first turn: the session's system prompt
    system_tokens: int = 0


@dataclass(frozen=True)
class SessionStart:
    system: str | None = None
    system_tokens: int = 0
    info: JsonObject = field(default_factory=dict)


class TurnProvider(Protocol):
    rng: np.random.Generator

    def start(self) -> SessionStart: ...

    def turn(self, k: int) -> Turn | None: ...


class SessionConfig(Protocol):
    ignore_eos: bool
    max_tokens_cap: int | None
    multi_turn: int
    guard: LengthGuard


class SessionSource:
    keeps_history = True  # the user hands ``observe`` the reply's text: it joins the history

    def __init__(self, provider: TurnProvider, index: int, config: SessionConfig) -> None:
        self.p, self.index, self.cfg = provider, index, config
        self.sessions = 0
        self.cut = 0  # sessions ended early because the history would not fit
        self._new_session()

    def _new_session(self) -> None:
        self.start = self.p.start()
        self.history: list[JsonObject] = []
        self.history_tokens = self.start.system_tokens
        self.k = 0
        self.pending: tuple[JsonObject, int] | None = None
        self.session_id = f"{self.index}-{self.sessions}"
        self.sessions += 1
        self.turns = self._turns()

    def _turns(self) -> int:
        """How many requests this session may send (the last one ends it)."""
        return max(self.cfg.multi_turn, 1)

    def next_request(self) -> RequestSpec:
        if self.pending is not None or self.k >= self.turns:
            self._new_session()
        turn = self.p.turn(self.k)
        if turn is None or (self.k and not self._fits(turn)):
            self.cut += turn is not None
            self._new_session()
            turn = self.p.turn(0)
            assert turn is not None
        if self.k == 0 and turn.system is not None:
            self.start = SessionStart(turn.system, turn.system_tokens, self.start.info)
            self.history_tokens = turn.system_tokens
        return self._spec(turn)

    def _fits(self, turn: Turn) -> bool:
        return bool(self.cfg.guard.fits(self.history_tokens + turn.user_tokens, turn.output_tokens))

    def _message(self, turn: Turn) -> JsonObject:
        """The message this turn adds to the history: the user's."""
        return {"role": "user", "content": turn.user}

    def _reply(self, text: str) -> JsonObject:
        """The server's reply as the history keeps it."""
        return {"role": "assistant", "content": text}

    def _spec(self, turn: Turn) -> RequestSpec:
        user = self._message(turn)
        messages = [*list(self.history), user]
        if self.start.system is not None:
            messages.insert(0, {"role": "system", "content": self.start.system})
        self.pending = (user, turn.user_tokens)
        return make_spec(
            messages,
            self.history_tokens + turn.user_tokens,
            turn.output_tokens,
            ignore_eos=self.cfg.ignore_eos,
            cap=self.cfg.max_tokens_cap,
            session_id=self.session_id,
            turn=self.k,
            info={**self.start.info, **turn.info, **self._info()},
        )

    def _info(self) -> JsonObject:
        return {}

    def observe(self, spec: RequestSpec, response_text: str, ok: bool) -> None:
        if self.pending is None or spec.session_id != self.session_id or spec.turn != self.k:
            return
        user, user_tokens = self.pending
        self.pending = None
        if not ok:
            self.k = 1 << 30  # ends the session
            return
        self.history += [user, self._reply(response_text)]
        self.history_tokens += user_tokens + approx_count(response_text)
        self.k += 1

    def observe_usage(self, spec: RequestSpec, prompt_tokens: int | None) -> None:
        return None


class TurnLengths(Protocol):
    """What :class:`SyntheticTurns` reads of its sampled workload
    (:class:`~llm_locust.workload.sampled.SampledWorkload`)."""

    seed: int
    builder: PromptBuilder
    prefix: NoPrefix | SharedPrefix | BlockPrefix

    def draw(self, rng: np.random.Generator) -> LengthSample: ...

    def written(self, target: int) -> int: ...


class SyntheticTurns:
    """Turns for a sampled workload: each turn's new user message has a sampled length."""

    def __init__(self, workload: TurnLengths, index: int) -> None:
        self.w, self.index = workload, index
        self.rng = stream_rng(workload.seed, index)
        self.counter = 0
        self.choice = PrefixChoice()

    def start(self) -> SessionStart:
        return SessionStart()

    def turn(self, k: int) -> Turn:
        w = self.w
        sample = w.draw(self.rng)
        written = w.written(sample.input_tokens)
        choice = w.prefix.pick(self.rng, sample, written) if k == 0 else PrefixChoice()
        body = w.builder.prompt(max(1, written - choice.tokens), self.index, self.counter)
        self.counter += 1
        text = user_text(choice, body)
        if choice.system is not None:
            return Turn(
                text,
                sample.input_tokens - choice.tokens,
                sample.output_tokens,
                dict(choice.info),
                system=choice.system,
                system_tokens=choice.tokens,
            )
        return Turn(text, sample.input_tokens, sample.output_tokens, dict(choice.info))
