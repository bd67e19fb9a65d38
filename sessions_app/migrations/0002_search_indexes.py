"""Full-text search indexes for SearchDocument (hand-written: Django models cannot express them).

PostgreSQL: a stored generated tsvector column (`tsv`, 'simple' configuration, so code
identifiers are not stemmed) with a GIN index.
SQLite: an external-content FTS5 table over SearchDocument.text, kept in sync by triggers
(so bulk_create, cascading deletes and flushes all keep it right).

bin/regen-migrations keeps this file when it regenerates 0001_initial.
"""

from django.db import migrations

DOC = "sessions_app_searchdocument"
FTS = "sessions_app_searchfts"

POSTGRES_UP = [
    f"ALTER TABLE {DOC} ADD COLUMN tsv tsvector "
    f"GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, text)) STORED",
    f"CREATE INDEX sessions_app_searchdoc_tsv ON {DOC} USING gin (tsv)",
]
POSTGRES_DOWN = [
    "DROP INDEX IF EXISTS sessions_app_searchdoc_tsv",
    f"ALTER TABLE {DOC} DROP COLUMN IF EXISTS tsv",
]

SQLITE_UP = [
    f"CREATE VIRTUAL TABLE {FTS} USING fts5(text, content='{DOC}', content_rowid='entry_id', "
    f"tokenize='unicode61 remove_diacritics 2')",
    f"CREATE TRIGGER {FTS}_ai AFTER INSERT ON {DOC} BEGIN "
    f"INSERT INTO {FTS}(rowid, text) VALUES (new.entry_id, new.text); END",
    f"CREATE TRIGGER {FTS}_ad AFTER DELETE ON {DOC} BEGIN "
    f"INSERT INTO {FTS}({FTS}, rowid, text) VALUES ('delete', old.entry_id, old.text); END",
    f"CREATE TRIGGER {FTS}_au AFTER UPDATE ON {DOC} BEGIN "
    f"INSERT INTO {FTS}({FTS}, rowid, text) VALUES ('delete', old.entry_id, old.text); "
    f"INSERT INTO {FTS}(rowid, text) VALUES (new.entry_id, new.text); END",
    f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",
]
SQLITE_DOWN = [
    f"DROP TRIGGER IF EXISTS {FTS}_ai",
    f"DROP TRIGGER IF EXISTS {FTS}_ad",
    f"DROP TRIGGER IF EXISTS {FTS}_au",
    f"DROP TABLE IF EXISTS {FTS}",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        statements = statements_by_vendor.get(schema_editor.connection.vendor)
        if statements is None:
            return  # other databases fall back to substring search (selectors/search.py)
        for sql in statements:
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRES_UP, "sqlite": SQLITE_UP}),
            _run({"postgresql": POSTGRES_DOWN, "sqlite": SQLITE_DOWN}),
        )
    ]
