from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0010_provider_keys"),
    ]

    operations = [
        migrations.AddField(
            model_name="teammembership",
            name="role",
            field=models.CharField(
                choices=[("viewer", "Viewer"), ("editor", "Editor"), ("admin", "Admin")],
                default="editor",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="session",
            name="archived",
            field=models.BooleanField(db_index=True, default=False),
        ),
        migrations.AddField(
            model_name="session",
            name="pinned",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="session",
            name="tags",
            field=models.CharField(blank=True, default="", max_length=500),
        ),
    ]
