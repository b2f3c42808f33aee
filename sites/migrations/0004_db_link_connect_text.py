"""DBA_DB_LINKS, ALL_DB_LINKS and USER_DB_LINKS show a link's connect text from one function,
``aq_db_link_connect``, which the link pages and the API read too (sites.selectors): a link
through a Unix socket directory (its host starts with "/", as to the embedded server) reads
``localhost:PORT/DATABASE (socket /dir)`` rather than the directory as if it were a host name.
The stored host is left as it is."""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION aq_db_link_connect(host text, port integer, database text)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN left(host, 1) = '/'
                THEN 'localhost:' || port || '/' || database || ' (socket ' || host || ')'
                ELSE host || ':' || port || '/' || database END
$$;
"""


def _views(host: str) -> str:
    return f"""
CREATE OR REPLACE VIEW dba_db_links AS
SELECT l.id AS link_id,
       coalesce(u.username, 'PUBLIC') AS owner,
       l.name AS db_link,
       l.username AS username,
       {host} AS host,
       l.created AS created
FROM sites_databaselink l
LEFT JOIN auth_user u ON u.id = l.owner_id;

CREATE OR REPLACE VIEW all_db_links AS
SELECT l.id AS link_id,
       l.owner_id AS owner_id,
       coalesce(u.username, 'PUBLIC') AS owner,
       l.name AS db_link,
       l.username AS username,
       {host} AS host,
       l.created AS created
FROM sites_databaselink l
LEFT JOIN auth_user u ON u.id = l.owner_id;

CREATE OR REPLACE VIEW user_db_links AS
SELECT l.id AS link_id,
       l.owner_id AS owner_id,
       l.name AS db_link,
       l.username AS username,
       {host} AS host,
       l.created AS created
FROM sites_databaselink l;
"""


SQL = FUNCTION + _views("aq_db_link_connect(l.host, l.port, l.database)")
REVERSE = (
    _views("l.host || ':' || l.port || '/' || l.database")
    + "DROP FUNCTION IF EXISTS aq_db_link_connect(text, integer, text);"
)


class Migration(migrations.Migration):
    dependencies = [("sites", "0003_all_and_user_db_links")]
    operations = [migrations.RunSQL(SQL, REVERSE)]
