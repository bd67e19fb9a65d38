"""The browser agent: pi's tools and the agent loop, without Django.

- ``paths``: workspace containment (every path a tool touches stays inside the cwd's root);
- ``safefs``: opening files beneath a directory descriptor (openat2 RESOLVE_BENEATH);
- ``sandbox``: the bubblewrap command line, limits and pids cgroup every command runs in;
- ``shell``: running a command with streamed, tail-truncated, bounded-memory output;
- ``tools``: read, bash, edit, write, grep, find, ls with pi's contracts and notices;
- ``providers``: pi's four model APIs (OpenAI completions and Responses, Anthropic
  Messages, Google Generative AI), each request shaped as pi 0.80.2 shapes it;
- ``loop``: one agent run (stream, run tools, repeat) against the model's API.

The Django side (services/chat.py) supplies persistence, events and the abort signal.
"""
