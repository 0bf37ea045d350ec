"""A deterministic chat model that calls tools, and bag-of-words embeddings: what the middleware demo,
its tests and its benchmark run an agent on, with no model download and no network."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

__all__ = ["BagOfWordsEmbeddings", "ScriptedChatModel"]

STOP_WORDS = frozenset((
    "a", "an", "the", "is", "are", "was", "be", "to", "of", "in", "on", "at", "for", "and", "or", "what", "whats",
    "what's", "how", "me", "my", "i", "you", "your", "please", "tell", "do", "does", "can", "could", "would",
    "will", "it", "its", "this", "that", "there", "today", "now", "right",
))


def words(text: str) -> list[str]:
    """The content words of `text`: lower case, stop words dropped, a plural 's' cut."""
    tokens = re.findall(r"[a-z0-9]+", text.lower())
    return [t[:-1] if len(t) > 3 and t.endswith("s") else t for t in tokens if t not in STOP_WORDS]


class BagOfWordsEmbeddings(Embeddings):
    """Each content word hashed to one signed dimension, summed and normalised: texts sharing their
    content words ("weather in Paris?", "Paris weather today") are near, others far."""

    def __init__(self, dims: int = 256) -> None:
        self.dims = dims

    def embed_query(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for word in words(text) or ["<empty>"]:
            h = hashlib.blake2b(word.encode(), digest_size=8).digest()
            vector[int.from_bytes(h[:4], "big") % self.dims] += 1.0 if h[4] & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers from rules: "weather in CITY" calls the ``get_weather`` tool, a
    tool result becomes the final answer, anything else is answered by `reply` (by default it echoes
    the question and the system message's remembered facts). `calls` counts its invocations."""

    name_tag: str = "scripted"
    calls: int = 0
    reply: Callable[[str, str], str] | None = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def model_name(self) -> str:
        """What `model_identity` tells models apart by."""
        return self.name_tag

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        system = next((str(m.text) for m in messages if isinstance(m, SystemMessage)), "")
        if isinstance(last, ToolMessage):
            return AIMessage(content=f"[{self.name_tag}] {last.text}")
        question = str(last.text) if isinstance(last, HumanMessage) else ""
        city = re.search(r"weather (?:in|for) ([A-Za-z]+)", question, re.I)
        if city:
            call = {"name": "get_weather", "args": {"city": city.group(1).title()}, "id": f"call-{self.calls}"}
            return AIMessage(content="", tool_calls=[call])
        if self.reply is not None:
            return AIMessage(content=self.reply(question, system))
        remembered = system.split("What you remember about this user:", 1)[-1].strip() if "remember" in system else ""
        suffix = f" ({remembered})" if remembered else ""
        return AIMessage(content=f"[{self.name_tag}] you asked: {question}{suffix}")

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.calls += 1
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])
