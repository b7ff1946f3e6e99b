"""The types of the tools' arguments, with the limits of ``memtree_mcp.service.inputs`` written in once.

The SDK builds each tool's JSON schema from its signature, so these ``Field`` constraints are the
limits a client sees; the service checks every argument again against the same constants, so the
schema cannot promise more than the service accepts. The same argument means slightly different
things to different tools, so each tool adds its own description to a declaration here
(``Annotated[NodeId, Field(description=...)]``): pydantic merges the two into one field.
"""

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field, StrictBool, StrictFloat, StrictInt

from memtree_mcp.service import MemoryService
from memtree_mcp.service.inputs import (
    MAX_AGENT_STEPS,
    MAX_FORGET,
    MAX_K,
    MAX_NAMESPACE_CHARS,
    MAX_NODE_ID_CHARS,
    MAX_QUERY_CHARS,
    MAX_ROLE_CHARS,
    MAX_SESSION_CHARS,
    MAX_SUPERSEDES,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TIME_CHARS,
    MAX_TOKENS,
    MEMORY_ID_CHARS,
    MIN_SUMMARY_TOKENS,
)

# The one argument the SDK fills rather than the caller (it is left out of the schema): the context
# of the request, whose lifespan context is the service build_server was given.
MemoryContext = Context[MemoryService, Any]

# Self-explanatory to a model, and repeated in every tool: no description.
Namespace = Annotated[str | None, Field(max_length=MAX_NAMESPACE_CHARS)]

# remember's content has no maximum here: it is a setting (MEMTREE_MAX_CONTENT_CHARS), so
# build_server registers remember through tools.remember_tool, which adds the service's
# ``settings.max_content_chars`` as max_length. The Settings default read here instead would make
# a server configured otherwise advertise a limit its service does not enforce.
Content = Annotated[str, Field(min_length=1)]
Role = Annotated[str, Field(min_length=1, max_length=MAX_ROLE_CHARS)]
Tags = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]], Field(max_length=MAX_TAGS)
]
Session = Annotated[str | None, Field(max_length=MAX_SESSION_CHARS)]
# An ISO 8601 time, or for ``as_of`` a version number.
Timestamp = Annotated[str | None, Field(max_length=MAX_TIME_CHARS)]
NodeId = Annotated[str | None, Field(max_length=MAX_NODE_ID_CHARS)]
MemoryIds = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_NODE_ID_CHARS)]] | None,
    Field(min_length=1, max_length=MAX_FORGET),
]
# The ids of earlier memories a new one updates, each at most a memory id's length; their form is
# the service's check (inputs.check_supersedes), which tells a summary's id from a mistyped one.
Supersedes = Annotated[
    list[Annotated[str, Field(max_length=MEMORY_ID_CHARS)]] | None, Field(max_length=MAX_SUPERSEDES)
]
# true or false only: pydantic's lax mode would take "yes", "on" or 1 for true.
Flag = StrictBool

Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
OptionalQuery = Annotated[str | None, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
# Numbers only: pydantic's lax mode would take "5" for 5 and true for 1 (issue 31).
HitCount = Annotated[StrictInt, Field(ge=1, le=MAX_K)]
TokenBudget = Annotated[StrictInt | None, Field(ge=1, le=MAX_TOKENS)]
SummaryTokens = Annotated[StrictInt, Field(ge=MIN_SUMMARY_TOKENS, le=MAX_TOKENS)]
AgentSteps = Annotated[StrictInt, Field(ge=1, le=MAX_AGENT_STEPS)]
ChildIndex = Annotated[StrictInt | None, Field(ge=0)]
Share = Annotated[StrictFloat, Field(ge=0.0, le=1.0)]
