"""Which model a request uses, with which key: the catalog, pi's config, users' keys.

**The catalog** is pi's built-in model list (``sessions_app/data/pi_models.json``,
written by ``bin/generate-model-catalog``), merged with the ``models.json`` of pi's agent
folder as pi merges it (``context.pi_config.merge_models``), then with piweb's own
environment models: the ``PIWEB_LLM_*`` default profile and the profiles of
``PIWEB_MODEL_PROFILES`` become ``openai-completions`` models (the profile's provider,
default ``openai-compatible``), replacing a catalog entry with the same provider and id.
Each entry is a dict in pi's ``Model`` shape.

**Keys** of a provider, first found wins (pi's order, with the user's own key first):

1. ``user-key``: the key the person sending the message stored on the Models page;
2. ``pi-auth``: pi's ``auth.json`` entry: an ``api_key`` entry's value resolved
   (``$VAR``, ``${VAR}``, ``!command``, literal), or for an ``oauth`` entry the output
   of ``pi auth print-api-key --provider P`` when a pi that has that command is on the
   PATH (else the provider is unavailable, with the reason);
3. ``models.json``: the provider's ``apiKey`` there, resolved the same way;
4. ``env``: the environment variables pi reads for that provider (``ANTHROPIC_API_KEY``,
   ``OPENAI_API_KEY``, ``GEMINI_API_KEY``, ``OPENROUTER_API_KEY``, ... as the catalog
   lists them), or an environment profile's ``api_key``.

Sources 2-4 are the server's; PIWEB_SERVER_KEYS=staff keeps them to staff users.

**A session's model** at a leaf: the one its path records (its last ``model_change`` or
assistant message, as the core's ``build_session_context`` says) when that model is in
the catalog and this user has a key for it; else the session's environment profile
(``Session.model_profile``); a recorded model without a key and no profile refuses the
run (pick another model or add a key); with nothing recorded: the user's default (Models page), else pi's
``settings.json`` ``defaultProvider``/``defaultModel``, else the ``PIWEB_LLM_*``
default. The **window** at a leaf is the recorded model's catalog window, so an imported
Claude session keeps its 200k window even where piweb cannot call Claude.

No model configured is a normal state: ``resolve_model`` returns None.
Keys never leave this module in logs or pages (``ModelProfile``/``ResolvedModel`` hide
them in ``repr``; errors name the provider and the variable or command, never a value).

The package is cut along those seams: ``catalog`` (the models, pi's agent folder, the
environment profiles, prices, the user's defaults), ``keys`` (where a key comes from and
the headers that go with it), ``resolution`` (the model a request or a run uses, the
lists of models to pick from, the retry policy) and ``windows`` (context windows and the
compaction settings measured against them). Import from the module that holds a name.
"""
