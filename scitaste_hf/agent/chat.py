"""A small OpenAI-compatible chat client for the agent loop, with per-provider parameter profiles.

Some endpoints reject what others accept (temperature or reasoning effort together with tools,
``tool_choice: "required"``, a null ``content`` beside ``tool_calls``: the loop always sends ``"auto"`` and
``""``); a :class:`Profile` says what else to send. Retries run on tenacity with the pieces every HTTP client of
the package shares (:mod:`scitaste_hf.net.retry`): on 429, 5xx and connection errors the backoff doubles from 0.5 s to
30 s and is never shorter than ``Retry-After`` (seconds or an HTTP date, up to ``max_retry_after``). Every wait is
bounded: a request by ``timeout`` (the whole reply, not each read), a paper by the caller's deadline; a request
that timed out is retried once at most, since a model too slow once is too slow again and the server keeps
generating for an abandoned request. Any reply that is not a chat completion of the expected shape is retried
once, then fails. What fails comes back as a :class:`ChatError` with a reason (``api_error`` or ``timeout``),
which the loop records as a counted failure. The API key is redacted from everything the client returns or
raises, as the source clients do.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import tenacity

from scitaste_hf import constants
from scitaste_hf.net.retry import AtLeastRetryAfter, retry_after_seconds

log = logging.getLogger(__name__)
#: Largest reply body read; a longer one is not a chat completion this benchmark can use.
MAX_REPLY_BYTES = 16 << 20


@dataclass(frozen=True)
class Profile:
    """What one provider or model accepts.

    Attributes
    ----------
    temperature_with_tools : bool
        Send ``temperature`` in requests that offer tools.
    max_tokens : int
        Token budget of a reply (thinking models need more).
    search : dict
        Extra request fields that switch the provider's own web search on (``native_search`` modes); empty when
        the provider has none, in which case those modes are reported as unsupported, not faked.
    answer_schema : bool
        Constrain answer requests (those without tools) to the answer's JSON schema with
        ``response_format: {"type": "json_object", "schema": ...}`` (llama.cpp's form): small models otherwise
        invent their own dimension keys.
    tool_roles : bool
        Whether the endpoint's chat template renders tool calls and their results; where it does not (llama.cpp's
        chatml-function-calling drops the results), a round 1 made by the harness is sent as text.
    """

    temperature_with_tools: bool = True
    max_tokens: int = 4096
    search: dict[str, Any] = field(default_factory=dict)
    answer_schema: bool = False
    tool_roles: bool = True


#: Known profiles by name (``--model_args profile=NAME``).
PROFILES: dict[str, Profile] = {
    "default": Profile(),
    "openai": Profile(search={"web_search_options": {}}),
    "openai-reasoning": Profile(temperature_with_tools=False, max_tokens=16384, search={"web_search_options": {}}),
    "dashscope": Profile(search={"enable_search": True}),
    "openrouter": Profile(search={"plugins": [{"id": "web"}]}),
    "llama-cpp": Profile(max_tokens=1024, answer_schema=True, tool_roles=False),
}


def make_client(base_url: str, model: str, *, profile: str = "default", max_gen_toks: int | None = None,
                timeout: float = 120.0, max_retries: int = 4, max_retry_after: float = 30.0) -> ChatClient:
    """The chat client of ``scitaste-agent`` and ``scitaste preflight``: a named profile, the key from
    ``$OPENAI_API_KEY``.

    Parameters
    ----------
    base_url : str
        The endpoint root, ending in ``/v1``.
    model : str
    profile : str
        A key of :data:`PROFILES`.
    max_gen_toks : int, optional
        Token budget of a reply in place of the profile's.
    timeout, max_retries, max_retry_after : float, int, float
        As for :class:`ChatClient`.

    Raises
    ------
    ScitasteError
        On an unknown profile.
    """
    from scitaste_hf.errors import ScitasteError

    if profile not in PROFILES:
        raise ScitasteError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
    chosen = PROFILES[profile]
    if max_gen_toks is not None:
        chosen = dataclasses.replace(chosen, max_tokens=int(max_gen_toks))
    return ChatClient(base_url, model, api_key=constants.read(constants.OPENAI_API_KEY), profile=chosen,
                      timeout=float(timeout), max_retries=int(max_retries), max_retry_after=float(max_retry_after))


class ChatError(Exception):
    """A chat request that failed for good; ``reason`` is a failure reason of the benchmark."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


class _Transient(ChatError):
    """A failure another attempt may cure; ``retry_after`` is the wait the server asked for (capped)."""

    def __init__(self, reason: str, detail: str, retry_after: float = 0.0) -> None:
        super().__init__(reason, detail)
        self.retry_after = retry_after


class _Malformed(ChatError):
    """A 200 answer that is not a chat completion of the expected shape."""

    def __init__(self, url: str, what: str) -> None:
        super().__init__("api_error", f"malformed reply from {url}: {what}")


@dataclass
class Reply:
    """One assistant reply."""

    content: str
    tool_calls: list[dict[str, Any]]
    usage: dict[str, Any]
    latency: float


class ChatClient:
    """``POST {base_url}/chat/completions`` for one model.

    Parameters
    ----------
    base_url : str
        The endpoint root, ending in ``/v1``.
    model : str
    api_key : str, optional
        Sent as a bearer token; never logged, and replaced by ``***`` wherever an endpoint echoes it.
    profile : Profile
    timeout : float
        Seconds for one request, from sending it to the last byte of the reply.
    max_retries : int
        Attempts after the first on 429, 5xx and connection errors (a timeout or a malformed reply is retried
        once at most).
    max_retry_after : float
        Longest ``Retry-After`` honoured; a server asking for more is waited on this long (with a warning).
    transport : httpx.AsyncBaseTransport, optional
        For tests and special networking, as httpx allows (requests run on an event loop, so that one deadline
        bounds each of them whole: :mod:`scitaste_hf.net.bounded`).
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, profile: Profile | None = None,
                 timeout: float = 120.0, max_retries: int = 4, max_retry_after: float = 30.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.profile = profile or Profile()
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_after = max_retry_after
        self._secret = api_key or None
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._transport = transport

    def with_profile(self, profile: Profile) -> ChatClient:
        """The same endpoint and model under another profile."""
        twin = copy.copy(self)
        twin.profile = profile
        return twin

    def redact(self, text: str) -> str:
        """``text`` with the API key replaced by ``***``."""
        return text.replace(self._secret, "***") if self._secret else text

    def payload(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, search: bool = False,
                response_format: dict[str, Any] | None = None) -> dict[str, Any]:
        """The request body for ``messages``, shaped by the profile."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": self.profile.max_tokens}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if not tools or self.profile.temperature_with_tools:
            body["temperature"] = 0.0
        if search:
            body.update(self.profile.search)
        if response_format:
            body["response_format"] = response_format
        elif self.profile.answer_schema and not tools:
            from scitaste_hf.schema import Answer

            body["response_format"] = {"type": "json_object", "schema": Answer.model_json_schema()}
        return body

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
             search: bool = False, response_format: dict[str, Any] | None = None,
             deadline: float | None = None) -> Reply:
        """One reply, retried on transient failures.

        Parameters
        ----------
        deadline : float, optional
            A :func:`time.monotonic` instant by which the reply must be in (the paper's time budget): requests
            are cut short and retries given up so as to end by then.
        """
        body = self.payload(messages, tools, search=search, response_format=response_format)
        once: Counter[str] = Counter()  # timeouts and malformed replies seen, each retried once at most

        def stop(state: tenacity.RetryCallState) -> bool:
            return state.attempt_number > self.max_retries or (
                deadline is not None and time.monotonic() + state.upcoming_sleep >= deadline)

        retrying = tenacity.Retrying(stop=stop, retry=tenacity.retry_if_exception_type(_Transient),
                                     wait=AtLeastRetryAfter(tenacity.wait_exponential(multiplier=0.5, max=30.0)),
                                     retry_error_callback=self._give_up)
        return retrying(self._attempt, body, deadline, once)

    def _attempt(self, body: dict[str, Any], deadline: float | None, once: Counter[str]) -> Reply:
        """One request; raises :class:`_Transient` for what another attempt may cure."""
        limit = self.timeout if deadline is None else min(self.timeout, deadline - time.monotonic())
        if limit <= 0:
            raise ChatError("timeout", "the paper's time budget ran out before a reply")
        started = time.monotonic()
        try:
            status, headers, raw = self._post(body, limit)
        except httpx.TimeoutException:
            once["timeout"] += 1
            kind = _Transient if once["timeout"] == 1 else ChatError
            raise kind("timeout", f"no reply from {self.url} in {limit:.0f} s") from None
        except httpx.HTTPError as exc:
            raise _Transient("api_error", self.redact(f"{type(exc).__name__} talking to {self.url}")) from None
        if status == 200:
            try:
                return self._reply(raw, time.monotonic() - started)
            except _Malformed as exc:  # an empty or cut-off 200 can be transient: one more try
                once["malformed"] += 1
                if once["malformed"] > 1:
                    raise
                raise _Transient(exc.reason, str(exc)) from None
        detail = f"HTTP {status} from {self.url}: {self._error_text(raw)}"
        if status not in (408, 409, 429) and status < 500:
            raise ChatError("api_error", detail)  # a request the endpoint rejects will not pass on a retry
        raise _Transient("api_error", detail, self._retry_after(headers.get("Retry-After")))

    def _give_up(self, state: tenacity.RetryCallState) -> Reply:
        """Raise the last failure once the attempts, or the paper's time budget, leave no retry."""
        error = state.outcome.exception()  # a _Transient: nothing else is retried
        if state.attempt_number > self.max_retries:
            raise error
        raise ChatError(error.reason, f"{error} (the paper's time budget ends before a retry)")

    def _post(self, body: dict[str, Any], limit: float) -> tuple[int, httpx.Headers, bytes]:
        """Status, headers and body of one request, the whole exchange within ``limit`` seconds."""
        from scitaste_hf.net.bounded import TooLarge, exchange

        try:
            return exchange("POST", self.url, limit=limit, max_bytes=MAX_REPLY_BYTES, headers=self._headers,
                            json=body, transport=self._transport)
        except TooLarge as exc:
            raise _Malformed(self.url, str(exc)) from None

    def _retry_after(self, value: str | None) -> float:
        """Seconds a ``Retry-After`` header asks for, at most ``max_retry_after`` (with a warning when more)."""
        wait = retry_after_seconds(value) or 0.0
        if wait > self.max_retry_after:
            log.warning("%s asked to wait %.0f s before retrying; waiting %g s (max_retry_after)", self.url, wait,
                        self.max_retry_after)
        return min(wait, self.max_retry_after)

    def _error_text(self, raw: bytes) -> str:
        """An error answer's message, redacted both as sent and as its JSON decodes (an endpoint may echo the key
        with escapes), at most 200 characters."""
        text = self.redact(raw.decode("utf-8", "replace"))
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return text[:200]
        message = data.get("error") if isinstance(data, dict) else None
        message = message.get("message") if isinstance(message, dict) else message
        return self.redact(_clean(message if isinstance(message, str) else json.dumps(data, ensure_ascii=False)))[:200]

    def _reply(self, raw: bytes, latency: float) -> Reply:
        text = self.redact(raw.decode("utf-8", "replace"))
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            raise _Malformed(self.url, f"not JSON: {text[:200]!r}") from None
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _Malformed(self.url, "no choices")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise _Malformed(self.url, f"message is {_kind(message)}, not an object")
        usage = data.get("usage")
        return Reply(self._content(message.get("content")), self._calls(message.get("tool_calls")),
                     usage if isinstance(usage, dict) else {}, latency)

    def _content(self, content: Any) -> str:
        """The reply text: a string, or the text parts of a list of content parts (OpenAI's other form);
        redacted as decoded and cleaned of what UTF-8 cannot encode."""
        if content is None or isinstance(content, str):
            return self.redact(_clean(content or ""))
        if isinstance(content, list) and all(isinstance(p, dict) for p in content):
            texts = [p.get("text") for p in content if p.get("type") == "text"]
            if all(isinstance(t, str) for t in texts):
                return self.redact(_clean("".join(texts)))
        raise _Malformed(self.url, f"content is {_kind(content)}, not text")

    def _calls(self, tool_calls: Any) -> list[dict[str, Any]]:
        """The tool calls as ``{"id", "name", "arguments"}`` with the arguments as JSON text."""
        if tool_calls is None:
            return []
        if not isinstance(tool_calls, list):
            raise _Malformed(self.url, f"tool_calls is {_kind(tool_calls)}, not a list")
        calls = []
        for call in tool_calls:
            function = call.get("function") if isinstance(call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            arguments = function.get("arguments") if isinstance(function, dict) else None
            if not isinstance(name, str) or not isinstance(arguments, str | dict | None):
                raise _Malformed(self.url, f"a tool call is not {{function: {{name, arguments}}}}: "
                                           f"{self.redact(_clean(json.dumps(call, ensure_ascii=False)))[:120]}")
            call_id = call.get("id")
            text = arguments if isinstance(arguments, str) else json.dumps(arguments or {}, ensure_ascii=False)
            calls.append({"id": self.redact(_clean(call_id)) if isinstance(call_id, str) and call_id
                          else f"call_{len(calls)}",
                          "name": self.redact(_clean(name)), "arguments": self.redact(_clean(text))})
        return calls


def _clean(text: str) -> str:
    """``text`` with what UTF-8 cannot encode (a lone surrogate from a ``\\ud800`` escape) replaced: one such
    character would otherwise make lm-eval's samples file, and so the run's evidence, fail to write."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _kind(value: Any) -> str:
    """``value``'s JSON type in words, for error details."""
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)
