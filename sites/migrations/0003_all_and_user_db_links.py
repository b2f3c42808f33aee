"""ALL_DB_LINKS and USER_DB_LINKS over the links, with Oracle's column names in lower case. Both
carry every link and its ``owner_id`` (hidden): the requesting user is a console user, not a
PostgreSQL role, so the per-user filter (own and PUBLIC links for ALL_, own for USER_) is the
status registry's (sites/status.py). The password never appears."""

from django.db import migrations, models

SQL = """
CREATE OR REPLACE VIEW all_db_links AS
SELECT l.id AS link_id,
       l.owner_id AS owner_id,
       coalesce(u.username, 'PUBLIC') AS owner,
       l.name AS db_link,
       l.username AS username,
       l.host || ':' || l.port || '/' || l.database AS host,
       l.created AS created
FROM sites_databaselink l
LEFT JOIN auth_user u ON u.id = l.owner_id;

CREATE OR REPLACE VIEW user_db_links AS
SELECT l.id AS link_id,
       l.owner_id AS owner_id,
       l.name AS db_link,
       l.username AS username,
       l.host || ':' || l.port || '/' || l.database AS host,
       l.created AS created
FROM sites_databaselink l;
"""

DROP = """
DROP VIEW IF EXISTS user_db_links;
DROP VIEW IF EXISTS all_db_links;
"""


class Migration(migrations.Migration):
    dependencies = [("sites", "0002_oracle_views")]
    operations = [
        migrations.CreateModel(
            name="AllDbLink",
            fields=[
                ("link_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("owner_id", models.IntegerField(null=True)),
                ("owner", models.CharField(max_length=150)),
                ("db_link", models.CharField(max_length=128)),
                ("username", models.CharField(max_length=63)),
                ("host", models.CharField(max_length=400)),
                ("created", models.DateTimeField()),
            ],
            options={"db_table": "all_db_links", "ordering": ["db_link"], "managed": False},
        ),
        migrations.CreateModel(
            name="UserDbLink",
            fields=[
                ("link_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("owner_id", models.IntegerField(null=True)),
                ("db_link", models.CharField(max_length=128)),
                ("username", models.CharField(max_length=63)),
                ("host", models.CharField(max_length=400)),
                ("created", models.DateTimeField()),
            ],
            options={"db_table": "user_db_links", "ordering": ["db_link"], "managed": False},
        ),
        migrations.RunSQL(SQL, DROP),
    ]
