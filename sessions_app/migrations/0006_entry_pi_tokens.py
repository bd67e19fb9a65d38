from django.db import migrations, models

BATCH = 2000


def backfill_pi_tokens(apps, schema_editor):
    """Store each existing entry's cut-point estimate (the pure core computes it; it has
    no Django import, so it is stable to use here). Rows left null are estimated when a
    compaction reads them."""
    import json

    from sessions_app.core.tokens import entry_token_estimate

    Entry = apps.get_model("sessions_app", "Entry")
    table = Entry._meta.db_table
    connection = schema_editor.connection
    last = 0
    while True:
        rows = list(
            Entry.objects.filter(pk__gt=last, pi_tokens__isnull=True)
            .order_by("pk")
            .values_list("pk", "line")[:BATCH]
        )
        if not rows:
            return
        updates = []
        for pk, line in rows:
            try:
                value = entry_token_estimate(json.loads(line))
            except (ValueError, TypeError, AttributeError):
                value = None
            if value is not None:
                updates.append((value, pk))
        with connection.cursor() as cursor:
            cursor.executemany(f"UPDATE {table} SET pi_tokens = %s WHERE id = %s", updates)
        last = rows[-1][0]


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0005_share_link_scope")]
    operations = [
        migrations.AddField("entry", "pi_tokens", models.BigIntegerField(blank=True, null=True)),
        migrations.RunPython(backfill_pi_tokens, migrations.RunPython.noop),
    ]
