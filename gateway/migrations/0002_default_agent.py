from django.db import migrations


def create_default_agent(apps, schema_editor):
    # DEFAULT_AGENT always exists (spec §1.6.1); the services refuse to remove it.
    apps.get_model("gateway", "Agent").objects.get_or_create(name="DEFAULT_AGENT")


class Migration(migrations.Migration):
    dependencies = [("gateway", "0001_initial")]

    operations = [migrations.RunPython(create_default_agent, migrations.RunPython.noop)]
