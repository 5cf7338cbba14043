"""How agents reach memex without anyone typing a memex command.

- :mod:`memex.agents.hook_io`: the plumbing every hook shares (the vault a
  hook uses, reading the event JSON, the fail-open contract, transcripts,
  work done after the answer).
- :mod:`memex.agents.hooks`: the agent-neutral handlers, one per lifecycle
  event (session start, prompt, stop, compaction, session end).
- :mod:`memex.agents.claude_code`, :mod:`memex.agents.codex`,
  :mod:`memex.agents.openclaw`: one adapter per agent, each a function from
  the agent's event JSON to the answer the agent expects.
- :mod:`memex.agents.install`: merging memex's entries into the agents'
  settings files, and taking exactly them out again.
- :mod:`memex.agents.mcp_server`: the ``memex mcp`` stdio server.

The adapters call the library (:class:`memex.Vault` and the context engine in
:mod:`memex.context`); they never write files themselves.
"""
