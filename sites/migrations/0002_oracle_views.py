"""DBA_DB_LINKS and GLOBAL_NAME over the sites tables, with Oracle's column names in lower case
(the unmanaged models DbaDbLink and GlobalName of 0001 read them). A link without an owner is
PUBLIC, as Oracle shows a public database link; HOST is the connect string host:port/database.
The password never appears."""

from django.db import migrations

SQL = """
CREATE OR REPLACE VIEW dba_db_links AS
SELECT l.id AS link_id,
       coalesce(u.username, 'PUBLIC') AS owner,
       l.name AS db_link,
       l.username AS username,
       l.host || ':' || l.port || '/' || l.database AS host,
       l.created AS created
FROM sites_databaselink l
LEFT JOIN auth_user u ON u.id = l.owner_id;

CREATE OR REPLACE VIEW global_name AS
SELECT s.id AS site_id, s.global_name AS global_name FROM aq_site s;
"""

DROP = """
DROP VIEW IF EXISTS global_name;
DROP VIEW IF EXISTS dba_db_links;
"""


class Migration(migrations.Migration):
    dependencies = [("sites", "0001_initial")]
    operations = [migrations.RunSQL(SQL, DROP)]
