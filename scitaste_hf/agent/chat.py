"""A small OpenAI-compatible chat client for the agent loop, with per-provider parameter profiles.

Some endpoints reject what others accept (temperature or reasoning effort together with tools,
``tool_choice: "required"``, a null ``content`` beside ``tool_calls``: the loop always sends ``"auto"`` and
``""``); a :class:`Profile` says what else to send. Retries
honour ``Retry-After`` on 429 and back off on 5xx and connection errors; what still fails comes back as a
:class:`ChatError` with a reason (``api_error`` or ``timeout``), which the loop records as a counted failure.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

import httpx


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
    """

    temperature_with_tools: bool = True
    max_tokens: int = 4096
    search: dict[str, Any] = field(default_factory=dict)
    answer_schema: bool = False


#: Known profiles by name (``--model_args profile=NAME``).
PROFILES: dict[str, Profile] = {
    "default": Profile(),
    "openai": Profile(search={"web_search_options": {}}),
    "openai-reasoning": Profile(temperature_with_tools=False, max_tokens=16384, search={"web_search_options": {}}),
    "dashscope": Profile(search={"enable_search": True}),
    "openrouter": Profile(search={"plugins": [{"id": "web"}]}),
    "llama-cpp": Profile(max_tokens=1024, answer_schema=True),
}


def make_client(base_url: str, model: str, *, profile: str = "default", max_gen_toks: int | None = None,
                timeout: float = 120.0, max_retries: int = 4) -> ChatClient:
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
    timeout, max_retries : float, int
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
    return ChatClient(base_url, model, api_key=os.environ.get("OPENAI_API_KEY"), profile=chosen,
                      timeout=float(timeout), max_retries=int(max_retries))


class ChatError(Exception):
    """A chat request that failed for good; ``reason`` is a failure reason of the benchmark."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


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
        Sent as a bearer token; never logged.
    profile : Profile
    timeout : float
        Seconds per request.
    max_retries : int
        Attempts after the first on 429, 5xx, timeouts and connection errors.
    transport : httpx.BaseTransport, optional
        For tests and special networking, as httpx allows.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, profile: Profile | None = None,
                 timeout: float = 120.0, max_retries: int = 4, transport: httpx.BaseTransport | None = None) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.profile = profile or Profile()
        self.max_retries = max_retries
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def with_profile(self, profile: Profile) -> ChatClient:
        """The same endpoint, model and connection pool under another profile."""
        twin = copy.copy(self)
        twin.profile = profile
        return twin

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
             search: bool = False, response_format: dict[str, Any] | None = None) -> Reply:
        """One reply, retried on transient failures."""
        body = self.payload(messages, tools, search=search, response_format=response_format)
        delay = 0.5
        for attempt in range(self.max_retries + 1):
            started = time.perf_counter()
            try:
                response = self.http.post(self.url, json=body)
            except httpx.TimeoutException:
                error: ChatError = ChatError("timeout", f"no reply from {self.url} in time")
            except httpx.HTTPError as exc:
                error = ChatError("api_error", f"{type(exc).__name__} talking to {self.url}")
            else:
                if response.status_code == 200:
                    try:
                        return self._reply(response, time.perf_counter() - started)
                    except ChatError as exc:  # an empty or cut-off 200 is usually transient: retried below
                        error = exc
                else:
                    error = ChatError("api_error", f"HTTP {response.status_code} from {self.url}: "
                                                   f"{response.text[:200]}")
                    if response.status_code not in (408, 409, 429) and response.status_code < 500:
                        raise error  # a request the endpoint rejects will not pass on a retry
                retry_after = response.headers.get("Retry-After")
                if retry_after and retry_after.replace(".", "", 1).isdigit():
                    delay = max(delay, float(retry_after))
            if attempt == self.max_retries:
                raise error
            time.sleep(delay)
            delay = min(delay * 2, 30.0)
        raise AssertionError("unreachable")

    def _reply(self, response: httpx.Response, latency: float) -> Reply:
        try:
            data = response.json()
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ChatError("api_error", f"malformed chat response from {self.url}: {response.text[:200]}") from None
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            arguments = function.get("arguments")
            calls.append({"id": call.get("id") or f"call_{len(calls)}", "name": function.get("name"),
                          "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {})})
        return Reply(message.get("content") or "", calls, data.get("usage") or {}, latency)
