"""litellm endpoints: text generation (summaries, the memory agent) and, shared, the calls themselves.

litellm is imported on the first call, never at module import: importing it costs seconds and, unless
``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set first, fetches a price list from the network.
:func:`import_litellm` sets that variable and turns off litellm's debug banners and telemetry;
:class:`LiteLLMEndpoint` is shared with :mod:`memtree_mcp.providers.remote_embedder`. The prompts
are in :mod:`memtree_mcp.llm.prompts`.

Any failure (bad key, unreachable endpoint, timeout, server error, empty answer) raises
:class:`~memtree_mcp.errors.ProviderError`; an error is never returned as text.

litellm is the optional extra ``llm`` (with what it pulls in, about 250 MB that the
default, offline configuration never loads); without it a ``litellm:`` setting is refused when
the process starts (:mod:`memtree_mcp.config`) and :func:`import_litellm` says what to install.

Each call has a total deadline, ``timeout`` seconds for all its attempts, and a cap on the bytes it
reads (:data:`CHAT_REPLY_BYTES`, :data:`EMBEDDING_REPLY_BYTES`): httpx's timeouts bound only the gap
between two reads, so an endpoint sending a byte a second held one call for 208 s under a 5 s
timeout, and a 50 MB reply, read whole, took a server from 510 to 1,554 MB (issue 31). The HTTP
client litellm uses is given a transport that checks both as each chunk arrives
(:class:`_BoundedTransport`; ``litellm.client_session`` for the providers reached through the OpenAI
SDK, an ``HTTPHandler`` passed to the call for Ollama), and the call itself runs in a worker thread
waited for until the deadline, for the providers whose HTTP client cannot be given one.

Only the endpoint given is reached: for an Ollama model not in litellm's price list, litellm asks
the server for the model's details (``/api/show``) without the ``api_base`` of the call, at
``OLLAMA_API_BASE`` or else Ollama's default port on localhost; :meth:`LiteLLMEndpoint.call` sets
``OLLAMA_API_BASE`` to the endpoint given (unless the user set it).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from typing import Any

from memtree_mcp.config import install_extra
from memtree_mcp.errors import ProviderError

__all__ = [
    "CHAT_REPLY_BYTES",
    "EMBEDDING_REPLY_BYTES",
    "LiteLLMEndpoint",
    "describe_provider_error",
    "detail",
    "import_litellm",
]

_IMPORT_LOCK = threading.Lock()
OLLAMA_PREFIXES = ("ollama/", "ollama_chat/")
_MAX_DETAIL = 300
CHAT_REPLY_BYTES = 1 << 20
"""The most bytes one chat answer may take (a summary is a few hundred tokens)."""
EMBEDDING_REPLY_BYTES = 64 << 20
"""The most bytes one embedding answer may take (64 texts of 3,072 numbers are about 5 MB of JSON)."""
# Past its deadline, a call's worker thread is given this long to notice and stop before the
# call gives up on it.
_GRACE_SECONDS = 2.0


@functools.cache
def _ollama_client() -> Any:
    """litellm's HTTP handler on the bounded transport, for the providers it reaches without the
    OpenAI SDK (Ollama): one for the process, like ``litellm.client_session``."""
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    from memtree_mcp.llm.bounded_http import bounded_client

    return HTTPHandler(client=bounded_client())


def import_litellm() -> Any:
    """Import litellm offline and quiet: local price list, no debug banners, no telemetry."""
    with _IMPORT_LOCK:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        try:
            import litellm
        except ModuleNotFoundError as exc:
            raise ProviderError(f"litellm is not installed: {install_extra('llm')}") from exc
        except Exception as exc:  # a broken install failing at import
            raise ProviderError(
                f"cannot import litellm ({type(exc).__name__}: {exc}); reinstall it: {install_extra('llm')}"
            ) from exc
        litellm.suppress_debug_info = True
        if hasattr(litellm, "telemetry"):
            litellm.telemetry = False
        if litellm.client_session is None:
            # httpx comes with litellm: imported only here, on the extra's own path.
            from memtree_mcp.llm.bounded_http import bounded_client

            # What litellm gives the OpenAI SDK, for every provider it reaches through it.
            litellm.client_session = bounded_client()
        return litellm


def detail(exc: BaseException, secret: str | None) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if secret:
        text = text.replace(secret, "***")
    if len(text) > _MAX_DETAIL:
        text = text[: _MAX_DETAIL - 3] + "..."
    return f"{type(exc).__name__}: {text}"


class LiteLLMEndpoint:
    """A litellm model and how to reach it, checked once; shared by the chat and embedding providers.

    ``model`` is a litellm model name (``"openai/gpt-4o-mini"``, ``"ollama/llama3"``); ``api_base``
    an OpenAI-compatible or provider endpoint; ``api_key`` falls back to the provider's usual
    environment variable. ``timeout`` (seconds) bounds each attempt and ``retries`` is how many times
    a failed attempt is retried. ``kind`` ("LLM", "embedding") names the calls in messages, and
    ``example`` is the model name a message about a missing model suggests.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None,
        api_key: str | None,
        timeout: float,
        retries: int,
        kind: str,
        example: str,
    ) -> None:
        if not model or not model.strip():
            raise ProviderError(f"no {kind} model configured; set a litellm model name such as {example!r}")
        if timeout <= 0:
            raise ProviderError(f"the {kind} timeout must be positive, got {timeout}")
        if retries < 0:
            raise ProviderError(f"the {kind} retries must be >= 0, got {retries}")
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.kind = kind

    def call(self, function: str, *, reply_bytes: int = CHAT_REPLY_BYTES, **payload: Any) -> Any:
        """Call ``litellm.<function>`` (``completion`` or ``embedding``) on this endpoint, within
        ``timeout`` seconds in all and reading at most ``reply_bytes`` of each reply.

        Retries happen in the HTTP client (``max_retries``); litellm's own retry wrapper
        (``num_retries``) stays off. Any failure raises ProviderError naming the model and what to check.
        """
        litellm = import_litellm()
        from memtree_mcp.llm.bounded_http import bounds  # after litellm, which brings httpx

        kwargs: dict[str, Any] = {
            "model": self.model,
            "timeout": self.timeout,
            "max_retries": self.retries,
            **payload,
        }
        if self.model.startswith(OLLAMA_PREFIXES):
            if self.api_base:
                os.environ.setdefault("OLLAMA_API_BASE", self.api_base)
            kwargs["client"] = _ollama_client()
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        deadline = time.monotonic() + self.timeout
        answer: list[Any] = []
        failure: list[BaseException] = []
        cut_short: list[str | None] = [None]

        def bounded_call() -> None:
            bounds.deadline, bounds.limit, bounds.exceeded = deadline, reply_bytes, None
            try:
                answer.append(getattr(litellm, function)(**kwargs))
            except BaseException as exc:  # handed to the caller's thread
                failure.append(exc)
            finally:
                cut_short[0] = bounds.exceeded
                bounds.deadline = bounds.limit = None

        worker = threading.Thread(target=bounded_call, name=f"memtree-{self.kind.lower()}-call", daemon=True)
        worker.start()
        worker.join(self.timeout + _GRACE_SECONDS)
        if worker.is_alive() or (cut_short[0] is not None and "deadline" in cut_short[0]):
            raise ProviderError(
                f"the {self.kind} call with model {self.model!r}{self._where} timed out: no whole answer "
                f"within {self.timeout:g} s (the timeout bounds the whole call); check that the endpoint "
                "is up and answers in time, or raise the timeout"
            )
        if cut_short[0] is not None:
            raise ProviderError(
                f"the {self.kind} call with model {self.model!r}{self._where} was stopped: "
                f"{cut_short[0]}, far more than a model's answer; check the endpoint (api_base)"
            )
        if failure:
            exc = failure[0]
            if not isinstance(exc, Exception):
                raise exc
            what = f"the {self.kind} call"
            raise ProviderError(
                describe_provider_error(what, self.model, self.api_base, exc, self._api_key)
            ) from exc
        return answer[0]

    @property
    def _where(self) -> str:
        return f" at {self.api_base}" if self.api_base else ""


def describe_provider_error(
    what: str, model: str, api_base: str | None, exc: BaseException, secret: str | None = None
) -> str:
    """A one-line message naming the model and saying what to check for this kind of failure."""
    name = type(exc).__name__
    where = f" at {api_base}" if api_base else ""
    if name in {"AuthenticationError", "PermissionDeniedError"}:
        hint = "check the API key (api_key or the provider's environment variable, e.g. OPENAI_API_KEY)"
    elif name in {"Timeout", "APITimeoutError", "TimeoutError"}:
        hint = "check that the endpoint is up and reachable, or raise the timeout"
    elif (
        name in {"APIConnectionError", "ConnectError", "ConnectionError"}
        or "connection error" in str(exc).lower()
    ):
        hint = "check the endpoint (api_base) and the network"
    elif name in {"NotFoundError", "BadRequestError", "LiteLLMUnknownProvider", "UnsupportedParamsError"}:
        hint = (
            "check the model name, including its provider prefix (e.g. 'openai/gpt-4o-mini'), "
            "and the endpoint"
        )
    elif name == "RateLimitError":
        hint = "the provider is rate-limiting; retry later or check the account's quota"
    else:
        hint = "check the API key, the endpoint (api_base) and that the provider is up"
    return f"{what} with model {model!r}{where} failed ({detail(exc, secret)}); {hint}"
