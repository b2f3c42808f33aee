"""aq_refuse(detail): raise ``detail`` as an error (invalid_parameter_value) from inside a
statement, so the whole statement, and in autocommit its transaction, is undone. The batch
enqueue calls it when the payloads it was given do not make one JSON value per message
(queues/engine/enqueue.py)."""

from django.db import migrations

SQL = """
CREATE FUNCTION aq_refuse(detail text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value', MESSAGE = detail;
END
$$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("queues", "0017_queue_name_upper"),
    ]

    operations = [
        migrations.RunSQL(SQL, "DROP FUNCTION IF EXISTS aq_refuse(text)"),
    ]
