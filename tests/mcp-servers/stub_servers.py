#!/usr/bin/env python3
"""Stub MCP servers that answer, on the wire, what four real memory servers' search tools answer.

    python stub_servers.py SERVER [--http PORT]      SERVER: qdrant | chroma | graphiti | mem0

stdio by default; with --http, streamable HTTP on 127.0.0.1:PORT at path /mcp (PORT 0 picks a free
port). Every run prints `listening on http://127.0.0.1:PORT/mcp` on stderr once the socket is bound.

Built on the official Python MCP SDK mcp==2.3.0 (tests/mcp-peers/requirements-client.txt), low-level
`mcp.server.lowlevel.Server`, so that tool listings and results are byte-for-byte what we choose: the
real servers run on other SDKs (fastmcp 2.7.0, mcp 1.6.0, mcp 1.27.2, mcp 1.30.0), and their tool
schemas and result framing were captured by running each real server's own tool code (with only its
storage/embedding backend faked) under a raw JSON-RPC client, and are reproduced below literally.

Data: corpus.json next to this file (keys qdrant, chroma, graphiti, mem0). The vector search is
replaced by a deterministic ranking: an item's score is the number of distinct lowercase words
(`\\w+`) of the query that occur as words of the item's text; items with score 0 are dropped;
order is score descending, then corpus order.

Each corpus has one item with "malformed": true (its text contains the word "broken"). When, and
only when, it is among the answered hits, the stub corrupts the answer on purpose (see
`corrupt_*` below): that is THE STUB'S DELIBERATE CORRUPTION, NOT THE REAL SERVER'S BEHAVIOUR.

Environment, as the real servers read it: qdrant COLLECTION_NAME (a default collection: the tool
then has no collection_name argument) and QDRANT_SEARCH_LIMIT (10); graphiti GRAPHITI_GROUP_ID
(default: corpus default_group_id); mem0 MEM0_DEFAULT_USER_ID (default "mem0-mcp").

No network but loopback; imports: stdlib, the mcp SDK and what it pulls in (anyio, pydantic,
jsonschema, starlette, uvicorn).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import socket
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import anyio
import jsonschema
import mcp.types as types
import pydantic
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

CORPUS_PATH = Path(__file__).with_name("corpus.json")
CORRUPT_DEPTH = 70  # graphiti: nesting depth of the corrupted `attributes` member

# ----------------------------------------------------------------------------------------------
# Literal tool definitions (name, description, inputSchema, outputSchema) as the real servers list
# them in tools/list, captured from the real servers (see the comment above each server below).
# ----------------------------------------------------------------------------------------------
# Captured with a raw JSON-RPC stdio client from: mcp-server-qdrant 0.8.1 (without / with COLLECTION_NAME),
# chroma-mcp 0.2.6, graphiti mcp_server @993e081a, mem0-mcp-server 0.2.1 -- each running its own tool code.
REAL_TOOLS: dict[str, dict[str, Any]] = {'qdrant_nodefault': {'name': 'qdrant-find',
                      'description': 'Look up memories in Qdrant. Use this tool when you need to: \n'
                                     ' - Find memories by their content \n'
                                     ' - Access memories for further analysis \n'
                                     ' - Get some personal information about the user',
                      'inputSchema': {'properties': {'query': {'description': 'What to search for',
                                                               'title': 'Query',
                                                               'type': 'string'},
                                                     'collection_name': {'description': 'The collection to '
                                                                                        'search in',
                                                                         'title': 'Collection Name',
                                                                         'type': 'string'}},
                                      'required': ['query', 'collection_name'],
                                      'type': 'object'}},
 'qdrant_default': {'name': 'qdrant-find',
                    'description': 'Look up memories in Qdrant. Use this tool when you need to: \n'
                                   ' - Find memories by their content \n'
                                   ' - Access memories for further analysis \n'
                                   ' - Get some personal information about the user',
                    'inputSchema': {'properties': {'query': {'description': 'What to search for',
                                                             'title': 'Query',
                                                             'type': 'string'}},
                                    'required': ['query'],
                                    'type': 'object'}},
 'chroma': {'name': 'chroma_query_documents',
            'description': 'Query documents from a Chroma collection with advanced filtering.\n'
                           '    \n'
                           '    Args:\n'
                           '        collection_name: Name of the collection to query\n'
                           '        query_texts: List of query texts to search for\n'
                           '        n_results: Number of results to return per query\n'
                           "        where: Optional metadata filters using Chroma's query operators\n"
                           '               Examples:\n'
                           '               - Simple equality: {"metadata_field": "value"}\n'
                           '               - Comparison: {"metadata_field": {"$gt": 5}}\n'
                           '               - Logical AND: {"$and": [{"field1": {"$eq": "value1"}}, '
                           '{"field2": {"$gt": 5}}]}\n'
                           '               - Logical OR: {"$or": [{"field1": {"$eq": "value1"}}, {"field1": '
                           '{"$eq": "value2"}}]}\n'
                           '        where_document: Optional document content filters\n'
                           '               Examples:\n'
                           '               - Contains: {"$contains": "value"}\n'
                           '               - Not contains: {"$not_contains": "value"}\n'
                           '               - Regex: {"$regex": "[a-z]+"}\n'
                           '               - Not regex: {"$not_regex": "[a-z]+"}\n'
                           '               - Logical AND: {"$and": [{"$contains": "value1"}, {"$not_regex": '
                           '"[a-z]+"}]}\n'
                           '               - Logical OR: {"$or": [{"$regex": "[a-z]+"}, {"$not_contains": '
                           '"value2"}]}\n'
                           '        include: List of what to include in response. By default, this will '
                           'include documents, metadatas, and distances.\n'
                           '    ',
            'inputSchema': {'properties': {'collection_name': {'title': 'Collection Name', 'type': 'string'},
                                           'query_texts': {'items': {'type': 'string'},
                                                           'title': 'Query Texts',
                                                           'type': 'array'},
                                           'n_results': {'default': 5,
                                                         'title': 'N Results',
                                                         'type': 'integer'},
                                           'where': {'anyOf': [{'additionalProperties': True,
                                                                'type': 'object'},
                                                               {'type': 'null'}],
                                                     'default': None,
                                                     'title': 'Where'},
                                           'where_document': {'anyOf': [{'additionalProperties': True,
                                                                         'type': 'object'},
                                                                        {'type': 'null'}],
                                                              'default': None,
                                                              'title': 'Where Document'},
                                           'include': {'default': ['documents', 'metadatas', 'distances'],
                                                       'items': {'type': 'string'},
                                                       'title': 'Include',
                                                       'type': 'array'}},
                            'required': ['collection_name', 'query_texts'],
                            'title': 'chroma_query_documentsArguments',
                            'type': 'object'}},
 'graphiti_search_nodes': {'name': 'search_nodes',
                           'description': 'Search for nodes (entities) in the graph memory.\n'
                                          '\n'
                                          '    Args:\n'
                                          '        query: The search query\n'
                                          '        group_ids: Optional group ID, or list of group IDs, to '
                                          'filter results (a single\n'
                                          '            string is accepted and treated as a one-element '
                                          'list)\n'
                                          '        max_nodes: Maximum number of nodes to return (default: '
                                          '10)\n'
                                          '        entity_types: Optional list of entity type names (node '
                                          'labels) to filter by\n'
                                          '        center_node_uuid: Optional UUID of a node to center the '
                                          'search around. Results\n'
                                          '            closer to this node in the graph are ranked higher.\n'
                                          '    ',
                           'inputSchema': {'properties': {'query': {'title': 'Query', 'type': 'string'},
                                                          'group_ids': {'anyOf': [{'type': 'string'},
                                                                                  {'items': {'type': 'string'},
                                                                                   'type': 'array'},
                                                                                  {'type': 'null'}],
                                                                        'default': None,
                                                                        'title': 'Group Ids'},
                                                          'max_nodes': {'default': 10,
                                                                        'title': 'Max Nodes',
                                                                        'type': 'integer'},
                                                          'entity_types': {'anyOf': [{'items': {'type': 'string'},
                                                                                      'type': 'array'},
                                                                                     {'type': 'null'}],
                                                                           'default': None,
                                                                           'title': 'Entity Types'},
                                                          'center_node_uuid': {'anyOf': [{'type': 'string'},
                                                                                         {'type': 'null'}],
                                                                               'default': None,
                                                                               'title': 'Center Node Uuid'}},
                                           'required': ['query'],
                                           'title': 'search_nodesArguments',
                                           'type': 'object'},
                           'outputSchema': {'$defs': {'ErrorResponse': {'properties': {'error': {'title': 'Error',
                                                                                                 'type': 'string'}},
                                                                        'required': ['error'],
                                                                        'title': 'ErrorResponse',
                                                                        'type': 'object'},
                                                      'NodeResult': {'properties': {'uuid': {'title': 'Uuid',
                                                                                             'type': 'string'},
                                                                                    'name': {'title': 'Name',
                                                                                             'type': 'string'},
                                                                                    'labels': {'items': {'type': 'string'},
                                                                                               'title': 'Labels',
                                                                                               'type': 'array'},
                                                                                    'created_at': {'anyOf': [{'type': 'string'},
                                                                                                             {'type': 'null'}],
                                                                                                   'title': 'Created '
                                                                                                            'At'},
                                                                                    'summary': {'anyOf': [{'type': 'string'},
                                                                                                          {'type': 'null'}],
                                                                                                'title': 'Summary'},
                                                                                    'group_id': {'title': 'Group '
                                                                                                          'Id',
                                                                                                 'type': 'string'},
                                                                                    'attributes': {'additionalProperties': True,
                                                                                                   'title': 'Attributes',
                                                                                                   'type': 'object'}},
                                                                     'required': ['uuid',
                                                                                  'name',
                                                                                  'labels',
                                                                                  'created_at',
                                                                                  'summary',
                                                                                  'group_id',
                                                                                  'attributes'],
                                                                     'title': 'NodeResult',
                                                                     'type': 'object'},
                                                      'NodeSearchResponse': {'properties': {'message': {'title': 'Message',
                                                                                                        'type': 'string'},
                                                                                            'nodes': {'items': {'$ref': '#/$defs/NodeResult'},
                                                                                                      'title': 'Nodes',
                                                                                                      'type': 'array'}},
                                                                             'required': ['message', 'nodes'],
                                                                             'title': 'NodeSearchResponse',
                                                                             'type': 'object'}},
                                            'properties': {'result': {'anyOf': [{'$ref': '#/$defs/NodeSearchResponse'},
                                                                                {'$ref': '#/$defs/ErrorResponse'}],
                                                                      'title': 'Result'}},
                                            'required': ['result'],
                                            'title': 'search_nodesOutput',
                                            'type': 'object'}},
 'graphiti_search_memory_facts': {'name': 'search_memory_facts',
                                  'description': 'Search the graph memory for relevant facts (entity '
                                                 'edges).\n'
                                                 '\n'
                                                 '    Args:\n'
                                                 '        query: The search query\n'
                                                 '        group_ids: Optional group ID, or list of group '
                                                 'IDs, to filter results (a single\n'
                                                 '            string is accepted and treated as a '
                                                 'one-element list)\n'
                                                 '        max_facts: Maximum number of facts to return '
                                                 '(default: 10)\n'
                                                 '        center_node_uuid: Optional UUID of a node to '
                                                 'center the search around\n'
                                                 '        edge_types: Optional list of edge (fact) type '
                                                 'names to filter by\n'
                                                 '        valid_at_after: Optional ISO-8601 lower bound; '
                                                 'only facts whose valid_at is at or\n'
                                                 '            after this time are returned (timezone-naive '
                                                 'is treated as UTC)\n'
                                                 '        valid_at_before: Optional ISO-8601 upper bound on '
                                                 "a fact's valid_at\n"
                                                 '        invalid_at_after: Optional ISO-8601 lower bound on '
                                                 "a fact's invalid_at\n"
                                                 '        invalid_at_before: Optional ISO-8601 upper bound '
                                                 "on a fact's invalid_at\n"
                                                 '    ',
                                  'inputSchema': {'properties': {'query': {'title': 'Query',
                                                                           'type': 'string'},
                                                                 'group_ids': {'anyOf': [{'type': 'string'},
                                                                                         {'items': {'type': 'string'},
                                                                                          'type': 'array'},
                                                                                         {'type': 'null'}],
                                                                               'default': None,
                                                                               'title': 'Group Ids'},
                                                                 'max_facts': {'default': 10,
                                                                               'title': 'Max Facts',
                                                                               'type': 'integer'},
                                                                 'center_node_uuid': {'anyOf': [{'type': 'string'},
                                                                                                {'type': 'null'}],
                                                                                      'default': None,
                                                                                      'title': 'Center Node '
                                                                                               'Uuid'},
                                                                 'edge_types': {'anyOf': [{'items': {'type': 'string'},
                                                                                           'type': 'array'},
                                                                                          {'type': 'null'}],
                                                                                'default': None,
                                                                                'title': 'Edge Types'},
                                                                 'valid_at_after': {'anyOf': [{'type': 'string'},
                                                                                              {'type': 'null'}],
                                                                                    'default': None,
                                                                                    'title': 'Valid At '
                                                                                             'After'},
                                                                 'valid_at_before': {'anyOf': [{'type': 'string'},
                                                                                               {'type': 'null'}],
                                                                                     'default': None,
                                                                                     'title': 'Valid At '
                                                                                              'Before'},
                                                                 'invalid_at_after': {'anyOf': [{'type': 'string'},
                                                                                                {'type': 'null'}],
                                                                                      'default': None,
                                                                                      'title': 'Invalid At '
                                                                                               'After'},
                                                                 'invalid_at_before': {'anyOf': [{'type': 'string'},
                                                                                                 {'type': 'null'}],
                                                                                       'default': None,
                                                                                       'title': 'Invalid At '
                                                                                                'Before'}},
                                                  'required': ['query'],
                                                  'title': 'search_memory_factsArguments',
                                                  'type': 'object'},
                                  'outputSchema': {'$defs': {'ErrorResponse': {'properties': {'error': {'title': 'Error',
                                                                                                        'type': 'string'}},
                                                                               'required': ['error'],
                                                                               'title': 'ErrorResponse',
                                                                               'type': 'object'},
                                                             'FactSearchResponse': {'properties': {'message': {'title': 'Message',
                                                                                                               'type': 'string'},
                                                                                                   'facts': {'items': {'additionalProperties': True,
                                                                                                                       'type': 'object'},
                                                                                                             'title': 'Facts',
                                                                                                             'type': 'array'}},
                                                                                    'required': ['message',
                                                                                                 'facts'],
                                                                                    'title': 'FactSearchResponse',
                                                                                    'type': 'object'}},
                                                   'properties': {'result': {'anyOf': [{'$ref': '#/$defs/FactSearchResponse'},
                                                                                       {'$ref': '#/$defs/ErrorResponse'}],
                                                                             'title': 'Result'}},
                                                   'required': ['result'],
                                                   'title': 'search_memory_factsOutput',
                                                   'type': 'object'}},
 'graphiti_get_status': {'name': 'get_status',
                         'description': 'Get the status of the Graphiti MCP server and database connection.',
                         'inputSchema': {'properties': {}, 'title': 'get_statusArguments', 'type': 'object'},
                         'outputSchema': {'properties': {'status': {'title': 'Status', 'type': 'string'},
                                                         'message': {'title': 'Message', 'type': 'string'}},
                                          'required': ['status', 'message'],
                                          'title': 'StatusResponse',
                                          'type': 'object'}},
 'mem0': {'name': 'search_memories',
          'description': 'Run a semantic search over existing memories.\n'
                         '\n'
                         '        Use filters to narrow results. Common filter patterns:\n'
                         '        - Single user: {"AND": [{"user_id": "john"}]}\n'
                         '        - Agent memories: {"AND": [{"agent_id": "agent_name"}]}\n'
                         '        - Recent memories: {"AND": [{"user_id": "john"}, {"created_at": {"gte": '
                         '"2024-01-01"}}]}\n'
                         '        - Multiple users: {"AND": [{"user_id": {"in": ["john", "jane"]}}]}\n'
                         '        - Cross-entity: {"OR": [{"user_id": "john"}, {"agent_id": "agent_name"}]}\n'
                         '\n'
                         '        user_id is automatically added to filters if not provided.\n'
                         '        ',
          'inputSchema': {'properties': {'query': {'description': 'Natural language description of what to '
                                                                  'find.',
                                                   'title': 'Query',
                                                   'type': 'string'},
                                         'filters': {'anyOf': [{'additionalProperties': True,
                                                                'type': 'object'},
                                                               {'type': 'null'}],
                                                     'default': None,
                                                     'description': 'Additional filter clauses (user_id '
                                                                    'injected automatically).',
                                                     'title': 'Filters'},
                                         'limit': {'anyOf': [{'type': 'integer'}, {'type': 'null'}],
                                                   'default': None,
                                                   'description': 'Maximum number of results to return.',
                                                   'title': 'Limit'},
                                         'enable_graph': {'anyOf': [{'type': 'boolean'}, {'type': 'null'}],
                                                          'default': None,
                                                          'description': 'Set true only when the user '
                                                                         'explicitly wants graph-derived '
                                                                         'memories.',
                                                          'title': 'Enable Graph'}},
                          'required': ['query'],
                          'title': 'search_memoriesArguments',
                          'type': 'object'},
          'outputSchema': {'properties': {'result': {'title': 'Result', 'type': 'string'}},
                           'required': ['result'],
                           'title': 'search_memoriesOutput',
                           'type': 'object'}}}

# graphiti mcp_server/src/graphiti_mcp_server.py GRAPHITI_MCP_INSTRUCTIONS (getzep/graphiti 993e081a)
GRAPHITI_INSTRUCTIONS = (
    '\n'
    'Graphiti is a memory service for AI agents built on a temporally-aware knowledge graph. It performs\n'
    'well with dynamic data such as user interactions, changing enterprise data, and external information.\n'
    '\n'
    'Graphiti organizes data as episodes (content snippets), nodes (entities), and facts (relationships\n'
    'between entities). Each piece of information is partitioned by group_id, so you can maintain separate\n'
    'knowledge domains in one graph.\n'
    '\n'
    'Bi-temporal model: every episode records both when it was ingested and when the events it describes\n'
    'actually occurred. Pass reference_time to add_memory to set the event-occurrence time; otherwise the\n'
    'current time is used. Facts carry valid_at / invalid_at metadata, so a fact can be superseded by newer\n'
    'information while its history is preserved.\n'
    '\n'
    'Core tools:\n'
    '- add_memory: add an episode (text, message, or JSON). Supports reference_time (bi-temporal),\n'
    '  excluded_entity_types and custom_extraction_instructions to steer extraction,\n'
    '  previous_episode_uuids to supply explicit context, update_communities to refresh community summaries,\n'
    '  and saga / saga_previous_episode_uuid to associate the episode with an ordered saga.\n'
    '- add_triplet: write a single fact (source entity -> fact -> target entity) directly, bypassing\n'
    '  extraction. graphiti-core resolves/deduplicates the endpoint entities and generates embeddings.\n'
    '- search_nodes: semantic + keyword + graph search over entities, optionally filtered by entity type\n'
    '  (node label) and re-ranked around a center_node_uuid.\n'
    '- search_memory_facts: search over facts (edges), optionally filtered by edge (fact) type and by\n'
    '  valid_at / invalid_at date ranges.\n'
    "- summarize_saga: generate or refresh the running summary of a saga's episodes.\n"
    '- build_communities: detect entity communities and produce higher-level community summaries.\n'
    '- get_episode_entities: trace provenance — the entities and facts created by specific episode UUIDs.\n'
    '- get_entity_edge / get_episodes: retrieve specific facts or episodes.\n'
    '- delete_episode: remove an episode and cascade-delete the entities/facts it solely created.\n'
    "- delete_entity_edge / clear_graph: remove a fact, or clear a group's data.\n"
    '\n'
    'Custom types: the server can register rich entity-type and edge-type models (with attributes and\n'
    'extraction instructions) from configuration, and constrain which edge types are allowed between which\n'
    'entity types via an edge_type_map. With no such configuration, default extraction behavior applies.\n'
    '\n'
    'When adding information, provide descriptive names and detailed content to improve search quality.\n'
    'When searching, use specific queries and consider filtering by group_id, type, or date range. The\n'
    'server requires a configured database and valid API keys for language-model operations.\n'
    ''
)


# ----------------------------------------------------------------------------------------------
# Shared helpers
# ----------------------------------------------------------------------------------------------
def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def rank(items: list[dict[str, Any]], text_of: Callable[[dict[str, Any]], str], query: str) -> list[tuple[int, dict[str, Any]]]:
    """(score, item) for items with score > 0, by score descending then corpus order."""
    q = words(query)
    scored = [(len(q & words(text_of(it))), k, it) for k, it in enumerate(items)]
    scored = [s for s in scored if s[0] > 0]
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [(s, it) for s, _, it in scored]


def text_result(text: str, structured: Any = None, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=is_error
    )


def error_result(text: str) -> types.CallToolResult:
    return text_result(text, is_error=True)


class ToolFailure(Exception):
    """Raised by a tool body; becomes an isError result carrying exactly str(self)."""


def fastmcp1_arguments(tool_name: str, model: type[pydantic.BaseModel], arguments: dict[str, Any]) -> dict[str, Any]:
    """Validate arguments the way mcp 1.x FastMCP does (pre-parse JSON strings for non-str fields,
    then the pydantic `<tool>Arguments` model); a failure reads `Error executing tool <tool>: <error>`.
    (The pydantic errors URL carries the stub's pydantic version, e.g. 2.14, where the real one's
    carries its own, e.g. 2.11.)"""
    data = dict(arguments)
    for name, field in model.model_fields.items():
        value = data.get(name)
        if isinstance(value, str) and field.annotation is not str:
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError:
                continue
            if not isinstance(parsed, (str, int, float)):
                data[name] = parsed
    try:
        return model.model_validate(data).model_dump()
    except pydantic.ValidationError as e:
        raise ToolFailure(f"Error executing tool {tool_name}: {e}") from None


def load_corpus() -> dict[str, Any]:
    return json.loads(CORPUS_PATH.read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------------------------
# 1. qdrant — mcp-server-qdrant 0.8.1 (PyPI, latest), file mcp_server_qdrant/mcp_server.py,
#    QdrantMCPServer.setup_tools.find + format_entry; qdrant.py QdrantConnector.search; settings.py.
#    Runs on fastmcp==2.7.0 (pinned), which resolves mcp 1.30.0.
#    Tool `qdrant-find`: query (str, required), collection_name (str, required) unless
#    COLLECTION_NAME is set (then the argument is removed). No outputSchema.
#    find() returns list[str] | None: ["Results for the query '<q>'", format_entry(e)...], with
#    format_entry = "<entry><content>{content}</content><metadata>{json.dumps(metadata) or ''}</metadata></entry>".
#    fastmcp 2.7.0 _convert_to_content serialises a list of non-MCP items as ONE text block:
#    pydantic_core.to_json(list, indent=2) — a JSON array of strings, not one block per entry.
#    None (nothing found, or the collection does not exist: search() returns []) -> content [].
#    Bad arguments (mcp 1.30 low-level jsonschema check): isError "Input validation error: <msg>".
# ----------------------------------------------------------------------------------------------
def qdrant_server() -> Server[Any]:
    corpus = load_corpus()["qdrant"]
    default_collection = os.environ.get("COLLECTION_NAME") or None
    limit = int(os.environ.get("QDRANT_SEARCH_LIMIT", "10"))
    tool = copy.deepcopy(REAL_TOOLS["qdrant_default" if default_collection else "qdrant_nodefault"])

    def format_entry(entry: dict[str, Any]) -> str:
        metadata = json.dumps(entry["metadata"]) if entry.get("metadata") else ""
        if entry.get("malformed"):
            # DELIBERATE STUB CORRUPTION (not the real server): the closing </content> tag is left out.
            return f"<entry><content>{entry['content']}<metadata>{metadata}</metadata></entry>"
        return f"<entry><content>{entry['content']}</content><metadata>{metadata}</metadata></entry>"

    def find(arguments: dict[str, Any]) -> types.CallToolResult:
        try:
            jsonschema.validate(instance=arguments, schema=tool["inputSchema"])
        except jsonschema.ValidationError as e:
            return error_result(f"Input validation error: {e.message}")
        query = arguments["query"]
        collection = default_collection or arguments["collection_name"]
        hits = rank(corpus["entries"], lambda e: e["content"], query)[:limit] if collection == corpus["collection"] else []
        if not hits:
            return types.CallToolResult(content=[], is_error=False)
        content = [f"Results for the query '{query}'"] + [format_entry(e) for _, e in hits]
        return text_result(json.dumps(content, indent=2, ensure_ascii=False))

    return build_server("mcp-server-qdrant", "1.30.0", None, [tool], {tool["name"]: find})


# ----------------------------------------------------------------------------------------------
# 2. chroma — chroma-mcp 0.2.6 (PyPI, latest), file chroma_mcp/server.py, chroma_query_documents
#    (returns collection.query(...) as a Dict). Runs on mcp[cli]==1.6.0 (pinned; needs pydantic<2.12)
#    and chromadb 1.5.9. Tool `chroma_query_documents(collection_name: str, query_texts: list[str],
#    n_results: int = 5, where: dict|None = None, where_document: dict|None = None,
#    include: list[str] = ["documents", "metadatas", "distances"])`. No outputSchema, no structuredContent.
#    mcp 1.6.0 _convert_to_content: ONE text block, json.dumps(to_jsonable_python(QueryResult)) (compact,
#    ASCII), keys in this order: ids, embeddings, documents, uris, included, data, metadatas, distances;
#    one row per query text; columns not included are null; a document without metadata is null in
#    its row. Errors are isError "Error executing tool chroma_query_documents: ..." (see below).
# ----------------------------------------------------------------------------------------------
CHROMA_INCLUDES = ("documents", "embeddings", "metadatas", "distances", "uris", "data")
CHROMA_OPS = ("$gt", "$gte", "$lt", "$lte", "$ne", "$eq", "$in", "$nin", "$contains", "$not_contains")

ChromaArgs = pydantic.create_model(
    "chroma_query_documentsArguments",
    collection_name=(str, ...),
    query_texts=(List[str], ...),
    n_results=(int, 5),
    where=(Optional[Dict], None),
    where_document=(Optional[Dict], None),
    include=(List[str], ["documents", "metadatas", "distances"]),
)


def chroma_where(meta: dict[str, Any] | None, where: dict[str, Any]) -> bool:
    meta = meta or {}
    for key, cond in where.items():
        if key in ("$and", "$or"):
            parts = [chroma_where(meta, c) for c in cond]
            if not (all(parts) if key == "$and" else any(parts)):
                return False
            continue
        if not isinstance(cond, dict):
            cond = {"$eq": cond}
        for op, val in cond.items():
            if op not in CHROMA_OPS:
                raise ToolFailure(f"Expected where operator to be one of {', '.join(CHROMA_OPS)}, got {op} in query.")
            have = meta.get(key)
            ok = {
                "$eq": lambda: have == val, "$ne": lambda: have != val,
                "$in": lambda: have in val, "$nin": lambda: have not in val,
                "$gt": lambda: have is not None and have > val, "$gte": lambda: have is not None and have >= val,
                "$lt": lambda: have is not None and have < val, "$lte": lambda: have is not None and have <= val,
                "$contains": lambda: isinstance(have, list) and val in have,
                "$not_contains": lambda: not (isinstance(have, list) and val in have),
            }[op]()
            if not ok:
                return False
    return True


def chroma_where_document(doc: str, where: dict[str, Any]) -> bool:
    for key, val in where.items():
        if key in ("$and", "$or"):
            parts = [chroma_where_document(doc, c) for c in val]
            if not (all(parts) if key == "$and" else any(parts)):
                return False
        elif key == "$contains":
            if val not in doc:
                return False
        elif key == "$not_contains":
            if val in doc:
                return False
        elif key == "$regex":
            if not re.search(val, doc):
                return False
        elif key == "$not_regex":
            if re.search(val, doc):
                return False
    return True


def chroma_server() -> Server[Any]:
    corpus = load_corpus()["chroma"]
    tool = REAL_TOOLS["chroma"]
    name = tool["name"]

    def query(arguments: dict[str, Any]) -> types.CallToolResult:
        args = fastmcp1_arguments(name, ChromaArgs, arguments)
        if not args["query_texts"]:
            raise ToolFailure(f"Error executing tool {name}: The 'query_texts' list cannot be empty.")
        fail = f"Error executing tool {name}: Failed to query documents from collection '{args['collection_name']}': "
        if args["collection_name"] != corpus["collection"]:
            raise ToolFailure(fail + f"Collection [{args['collection_name']}] does not exist")
        include = list(args["include"])
        for inc in include:
            if inc not in CHROMA_INCLUDES:
                raise ToolFailure(fail + f"Expected include item to be one of {', '.join(CHROMA_INCLUDES)}, got {inc} in query.")
        if args["n_results"] <= 0:
            raise ToolFailure(fail + f"Number of requested results {args['n_results']}, cannot be negative, or zero. in query.")
        if "data" in include and "uris" not in include:
            include.append("uris")  # chromadb adds uris (and fetches metadatas) when data is asked for
        try:
            rows = []
            for text in args["query_texts"]:
                items = [it for it in corpus["items"]
                         if (args["where"] is None or chroma_where(it["metadata"], args["where"]))
                         and (args["where_document"] is None or chroma_where_document(it["document"], args["where_document"]))]
                rows.append(rank(items, lambda it: it["document"], text)[: args["n_results"]])
        except ToolFailure as e:
            raise ToolFailure(fail + str(e)) from None

        def column(key: str, cell: Callable[[int, dict[str, Any]], Any], wanted: bool) -> Any:
            return [[cell(s, it) for s, it in row] for row in rows] if wanted else None

        result: dict[str, Any] = {
            "ids": column("ids", lambda s, it: it["id"], True),
            "embeddings": column("embeddings", lambda s, it: chroma_embedding(it["document"]), "embeddings" in include),
            "documents": column("documents", lambda s, it: it["document"], "documents" in include),
            "uris": column("uris", lambda s, it: None, "uris" in include),
            "included": include,
            "data": None,
            "metadatas": None,
            "distances": column("distances", lambda s, it: 1.0 / (1 + s), "distances" in include),
        }
        if "metadatas" in include or "data" in include:
            # DELIBERATE STUB CORRUPTION (not the real server): the malformed item's metadata is left
            # out of its metadatas row, so that row is one shorter than its ids row.
            result["metadatas"] = [[it["metadata"] for s, it in row if not it.get("malformed")] for row in rows]
        if "embeddings" in include:
            # Real chroma-mcp: numpy arrays make json.dumps fail and mcp 1.6.0 falls back to str(result).
            return text_result(str(result))
        return text_result(json.dumps(result))

    return build_server("chroma", "1.6.0", None, [tool], {name: query})


def chroma_embedding(doc: str) -> list[float]:
    v = [0.0] * 8
    for w in sorted(words(doc)):
        v[sum(w.encode()) % 8] += 1.0
    n = sum(x * x for x in v) ** 0.5 or 1.0
    return [round(x / n, 8) for x in v]


# ----------------------------------------------------------------------------------------------
# 3. graphiti — getzep/graphiti commit 993e081a6d7948a0d8851c12a5fbdbeb49fed862 (mcp_server 1.0.2),
#    files mcp_server/src/graphiti_mcp_server.py (search_nodes, search_memory_facts, get_status),
#    src/models/response_types.py, src/utils/formatting.py (to_node_result, format_fact_result),
#    src/utils/type_config.py (coerce_group_ids, build_fact_search_filters); graphiti_core/edges.py
#    EntityEdge. Runs on mcp 1.27.2 (uv.lock), graphiti-core 0.29.2.
#    Return annotations `NodeSearchResponse | ErrorResponse` / `FactSearchResponse | ErrorResponse`
#    make mcp 1.27 FastMCP list an outputSchema wrapping the union in {"result": ...}; a call answers
#    ONE text block json (indent=2) of the dict AND structuredContent {"result": <dict>}; isError false
#    even for ErrorResponse ({"error": ...}). get_status (StatusResponse TypedDict) is not wrapped.
# ----------------------------------------------------------------------------------------------
GraphitiNodesArgs = pydantic.create_model(
    "search_nodesArguments",
    query=(str, ...),
    group_ids=(Optional[str | List[str]], None),
    max_nodes=(int, 10),
    entity_types=(Optional[List[str]], None),
    center_node_uuid=(Optional[str], None),
)
GraphitiFactsArgs = pydantic.create_model(
    "search_memory_factsArguments",
    query=(str, ...),
    group_ids=(Optional[str | List[str]], None),
    max_facts=(int, 10),
    center_node_uuid=(Optional[str], None),
    edge_types=(Optional[List[str]], None),
    valid_at_after=(Optional[str], None),
    valid_at_before=(Optional[str], None),
    invalid_at_after=(Optional[str], None),
    invalid_at_before=(Optional[str], None),
)
GraphitiStatusArgs = pydantic.create_model("get_statusArguments")

# graphiti_core EntityEdge field order (Edge: uuid, group_id, source_node_uuid, target_node_uuid,
# created_at; EntityEdge: name, fact, fact_embedding [excluded], episodes, expired_at, valid_at,
# invalid_at, reference_time, attributes), as model_dump(mode='json') emits it.
EDGE_FIELDS = ("uuid", "group_id", "source_node_uuid", "target_node_uuid", "created_at", "name", "fact",
               "episodes", "expired_at", "valid_at", "invalid_at", "reference_time", "attributes")
EDGE_DATES = ("created_at", "expired_at", "valid_at", "invalid_at", "reference_time")


def parse_time(value: str) -> datetime:
    """graphiti type_config.parse_reference_time: ISO-8601, Z allowed, naive = UTC, result in UTC."""
    v = value.strip()
    if v.endswith(("Z", "z")):
        v = v[:-1] + "+00:00"
    t = datetime.fromisoformat(v)
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def pydantic_json_datetime(value: str | None) -> str | None:
    """A datetime as pydantic's mode='json' writes it (UTC offset as Z)."""
    if value is None:
        return None
    t = datetime.fromisoformat(value)
    s = t.isoformat()
    return s[:-6] + "Z" if s.endswith("+00:00") else s


def nested(depth: int) -> dict[str, Any]:
    """{"a": {"a": ... {}}}: `depth` nested objects counting the outermost."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def graphiti_fact(f: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k in EDGE_FIELDS:
        v = f.get(k, [] if k == "episodes" else {} if k == "attributes" else None)
        out[k] = pydantic_json_datetime(v) if k in EDGE_DATES else copy.deepcopy(v)
    out["attributes"].pop("fact_embedding", None)
    if f.get("malformed"):
        # DELIBERATE STUB CORRUPTION (not the real server): attributes nested 70 objects deep.
        out["attributes"] = nested(CORRUPT_DEPTH)
    return out


def graphiti_node(n: dict[str, Any]) -> dict[str, Any]:
    attrs = {k: v for k, v in (n.get("attributes") or {}).items() if "embedding" not in k.lower()}
    created = n.get("created_at")
    out = {
        "uuid": n["uuid"],
        "name": n["name"],
        "labels": list(n.get("labels") or []),
        "created_at": datetime.fromisoformat(created).isoformat() if created else None,
        "summary": n.get("summary", ""),
        "group_id": n["group_id"],
        "attributes": copy.deepcopy(attrs),
    }
    if n.get("malformed"):
        # DELIBERATE STUB CORRUPTION (not the real server): attributes nested 70 objects deep.
        out["attributes"] = nested(CORRUPT_DEPTH)
    return out


def graphiti_server() -> Server[Any]:
    corpus = load_corpus()["graphiti"]
    default_group = os.environ.get("GRAPHITI_GROUP_ID", corpus.get("default_group_id", "main"))

    def answer(result: dict[str, Any]) -> types.CallToolResult:
        return text_result(json.dumps(result, indent=2, ensure_ascii=False), {"result": result})

    def groups(group_ids: str | list[str] | None) -> list[str]:
        if isinstance(group_ids, str):
            group_ids = [group_ids] if group_ids else None
        return group_ids if group_ids is not None else [default_group] if default_group else []

    def search_nodes(arguments: dict[str, Any]) -> types.CallToolResult:
        a = fastmcp1_arguments("search_nodes", GraphitiNodesArgs, arguments)
        gids = groups(a["group_ids"])
        items = [n for n in corpus["nodes"] if (not gids or n["group_id"] in gids)
                 and (not a["entity_types"] or set(a["entity_types"]) & set(n.get("labels") or []))]
        nodes = [n for _, n in rank(items, lambda n: f"{n['name']} {n.get('summary', '')}", a["query"])][: a["max_nodes"]]
        if not nodes:
            return answer({"message": "No relevant nodes found", "nodes": []})
        return answer({"message": "Nodes retrieved successfully", "nodes": [graphiti_node(n) for n in nodes]})

    def search_memory_facts(arguments: dict[str, Any]) -> types.CallToolResult:
        a = fastmcp1_arguments("search_memory_facts", GraphitiFactsArgs, arguments)
        if a["max_facts"] <= 0:
            return answer({"error": "max_facts must be a positive integer"})
        try:
            bounds = {k: parse_time(a[k]) if a[k] is not None else None
                      for k in ("valid_at_after", "valid_at_before", "invalid_at_after", "invalid_at_before")}
        except ValueError as e:
            return answer({"error": f"Invalid date filter: {e}"})

        def in_range(f: dict[str, Any], field: str) -> bool:
            lo, hi = bounds[f"{field}_after"], bounds[f"{field}_before"]
            if lo is None and hi is None:
                return True
            if f.get(field) is None:
                return False
            t = parse_time(f[field])
            return (lo is None or t >= lo) and (hi is None or t <= hi)

        gids = groups(a["group_ids"])
        items = [f for f in corpus["facts"] if (not gids or f["group_id"] in gids)
                 and (not a["edge_types"] or f["name"] in a["edge_types"])
                 and in_range(f, "valid_at") and in_range(f, "invalid_at")]
        facts = [f for _, f in rank(items, lambda f: f["fact"], a["query"])][: a["max_facts"]]
        if not facts:
            return answer({"message": "No relevant facts found", "facts": []})
        return answer({"message": "Facts retrieved successfully", "facts": [graphiti_fact(f) for f in facts]})

    def get_status(arguments: dict[str, Any]) -> types.CallToolResult:
        fastmcp1_arguments("get_status", GraphitiStatusArgs, arguments)
        status = {"status": "ok", "message": "Graphiti MCP server is running and connected to falkordb database"}
        return text_result(json.dumps(status, indent=2), status)

    tools = [REAL_TOOLS["graphiti_search_nodes"], REAL_TOOLS["graphiti_search_memory_facts"], REAL_TOOLS["graphiti_get_status"]]
    handlers = {"search_nodes": search_nodes, "search_memory_facts": search_memory_facts, "get_status": get_status}
    return build_server("Graphiti Agent Memory", "1.27.2", GRAPHITI_INSTRUCTIONS, tools, handlers)


# ----------------------------------------------------------------------------------------------
# 4. mem0 — mem0-mcp-server 0.2.1 (PyPI, latest; = github mem0ai/mem0-mcp b53a1f32), file
#    src/mem0_mcp_server/server.py, create_server().search_memories + _with_default_filters +
#    _mem0_call; it calls mem0ai 2.2.1 MemoryClient.search (mem0/client/main.py) -> POST
#    /v3/memories/search/ of the hosted API, whose {"results": [...]} it returns as
#    json.dumps(result, ensure_ascii=False). `-> str` under mcp 1.x FastMCP (mcp 1.30.0 = newest
#    mcp<2; an unpinned install today resolves mcp 2.3.0, where `mcp.server.fastmcp` no longer
#    imports) lists outputSchema {"result": string} and answers ONE text block with that JSON string
#    plus structuredContent {"result": "<the same string>"}.
#    Memory fields, in the order of docs/api-reference/memory/search-memories.mdx (mem0ai/mem0):
#    id, memory, user_id, metadata, score, expiration_date, created_at, updated_at, categories.
# ----------------------------------------------------------------------------------------------
Mem0Args = pydantic.create_model(
    "search_memoriesArguments",
    query=(str, ...),
    filters=(Optional[Dict[str, Any]], None),
    limit=(Optional[int], None),
    enable_graph=(Optional[bool], None),
)


def mem0_with_default_filters(default_user_id: str, filters: dict[str, Any] | None = None) -> dict[str, Any]:
    """Verbatim logic of mem0_mcp_server.server._with_default_filters."""
    if not filters:
        return {"AND": [{"user_id": default_user_id}]}
    if not any(key in filters for key in ("AND", "OR", "NOT")):
        filters = {"AND": [filters]}
    has_user = json.dumps(filters, sort_keys=True).find('"user_id"') != -1
    if not has_user:
        and_list = filters.setdefault("AND", [])
        if not isinstance(and_list, list):
            raise ValueError("filters['AND'] must be a list when present.")
        and_list.insert(0, {"user_id": default_user_id})
    return filters


def mem0_match(memory: dict[str, Any], flt: Any) -> bool:
    """A rough evaluator of the platform's filter language (AND/OR/NOT, equality, "*", in, gte, lte,
    gt, lt, ne, contains, icontains) over one memory record."""
    if isinstance(flt, list):
        return all(mem0_match(memory, f) for f in flt)
    if not isinstance(flt, dict):
        return True
    for key, cond in flt.items():
        if key == "AND":
            ok = all(mem0_match(memory, f) for f in cond)
        elif key == "OR":
            ok = any(mem0_match(memory, f) for f in cond)
        elif key == "NOT":
            ok = not any(mem0_match(memory, f) for f in (cond if isinstance(cond, list) else [cond]))
        else:
            have = memory.get(key)
            ok = mem0_condition(have, cond)
        if not ok:
            return False
    return True


def mem0_condition(have: Any, cond: Any) -> bool:
    if cond == "*":
        return have is not None
    if not isinstance(cond, dict):
        return have == cond or (isinstance(have, list) and cond in have)
    for op, val in cond.items():
        vals = have if isinstance(have, list) else [have]
        if op == "in":
            ok = any(v in val for v in vals)
        elif op == "ne":
            ok = have != val
        elif op in ("gte", "lte", "gt", "lt"):
            ok = have is not None and {"gte": have >= val, "lte": have <= val, "gt": have > val, "lt": have < val}[op]
        elif op == "contains":
            ok = any(v is not None and str(val) in str(v) for v in vals)
        elif op == "icontains":
            ok = any(v is not None and str(val).lower() in str(v).lower() for v in vals)
        else:
            ok = True
        if not ok:
            return False
    return True


def mem0_server() -> Server[Any]:
    corpus = load_corpus()["mem0"]
    default_user = os.environ.get("MEM0_DEFAULT_USER_ID", "mem0-mcp")
    tool = REAL_TOOLS["mem0"]
    name = tool["name"]

    def search_memories(arguments: dict[str, Any]) -> types.CallToolResult:
        a = fastmcp1_arguments(name, Mem0Args, arguments)
        try:
            filters = mem0_with_default_filters(default_user, a["filters"])
            query = a["query"].strip()
            if not query:  # mem0ai MemoryClient._validate_and_trim_search_query
                raise ValueError("Invalid query: cannot be empty or whitespace-only.")
        except ValueError as e:
            raise ToolFailure(f"Error executing tool {name}: {e}") from None
        qn = len(words(query)) or 1
        limit = a["limit"] if a["limit"] is not None else 10  # the API's top_k default
        hits = rank([m for m in corpus["memories"] if mem0_match(m, filters)], lambda m: m["memory"], query)[:limit]
        results = [{
            "id": m["id"],
            "memory": m["memory"],
            "user_id": m.get("user_id"),
            "metadata": m.get("metadata"),
            "score": round(s / qn, 4),
            "expiration_date": m.get("expiration_date"),
            "created_at": m.get("created_at"),
            "updated_at": m.get("updated_at"),
            "categories": m.get("categories", []),
        } for s, m in hits]
        text = json.dumps({"results": results}, ensure_ascii=False)
        if any(m.get("malformed") for _, m in hits):
            # DELIBERATE STUB CORRUPTION (not the real server): the JSON text is cut in half.
            text = text[: len(text) // 2]
        return text_result(text, {"result": text})

    return build_server("mem0", "1.30.0", None, [tool], {name: search_memories})


# ----------------------------------------------------------------------------------------------
# Server plumbing (mcp 2.3.0 low-level Server)
# ----------------------------------------------------------------------------------------------
def build_server(name: str, version: str, instructions: str | None, tools: list[dict[str, Any]],
                 handlers: dict[str, Callable[[dict[str, Any]], types.CallToolResult]]) -> Server[Any]:
    listed = [types.Tool.model_validate(t) for t in tools]
    schemas = {t["name"]: t["inputSchema"] for t in tools}

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        handler = handlers.get(params.name)
        if handler is None:
            return error_result(f"Unknown tool: {params.name}")
        try:
            return handler(dict(params.arguments or {}))
        except ToolFailure as e:
            return error_result(str(e))
        except Exception as e:  # the real FastMCP servers wrap a tool's exception the same way
            return error_result(f"Error executing tool {params.name}: {e}")

    return Server(name, version=version, instructions=instructions, on_list_tools=on_list_tools,
                  on_call_tool=on_call_tool, get_tool_input_schema=schemas.get)


SERVERS = {"qdrant": qdrant_server, "chroma": chroma_server, "graphiti": graphiti_server, "mem0": mem0_server}


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(server: Server[Any], port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.set_inheritable(True)
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("server", choices=sorted(SERVERS))
    parser.add_argument("--http", type=int, metavar="PORT", help="streamable HTTP on 127.0.0.1:PORT/mcp (0: any free port)")
    args = parser.parse_args(argv)
    server = SERVERS[args.server]()
    if args.http is None:
        anyio.run(serve_stdio, server)
    else:
        anyio.run(serve_http, server, args.http)


if __name__ == "__main__":
    main()
