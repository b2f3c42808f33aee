"""DBA_STREAMS_RULES gets a key: a rule in two rule sets is two rows, so rule_id is not one, and
the API's detail route for the view answered 500 (MultipleObjectsReturned) on such a rule."""

from django.db import migrations

SELECT = """
SELECT NULL::text AS streams_type,
       NULL::text AS streams_name,
       coalesce(su.username, 'AQADMIN') AS rule_set_owner,
       rs.name AS rule_set_name,
       coalesce(ru.username, 'AQADMIN') AS rule_owner,
       r.name AS rule_name,
       r.condition AS rule_condition,
       NULL::text AS rule_set_type,
       r.streams_rule_type,
       nullif(r.schema_name, '') AS schema_name,
       nullif(r.object_name, '') AS object_name,
       nullif(r.subsetting_operation, '') AS subsetting_operation,
       nullif(r.dml_condition, '') AS dml_condition,
       CASE WHEN r.include_tagged_lcr THEN 'YES' WHEN NOT r.include_tagged_lcr THEN 'NO' END
           AS include_tagged_lcr,
       nullif(r.source_database, '') AS source_database,
       nullif(r.rule_type, '') AS rule_type,
       CASE WHEN r.message_type <> '' THEN 'AQADMIN' END AS message_type_owner,
       nullif(r.message_type, '') AS message_type_name,
       nullif(r.message_rule_variable, '') AS message_rule_variable,
       nullif(r.original_condition, '') AS original_rule_condition,
       CASE WHEN r.original_condition = '' OR r.original_condition = r.condition THEN 'YES'
            ELSE 'NO' END AS same_rule_condition,
       r.id AS rule_id{key}
FROM rules_rule r
LEFT JOIN rules_rulesetrule m ON m.rule_id = r.id
LEFT JOIN rules_ruleset rs ON rs.id = m.rule_set_id
LEFT JOIN auth_user su ON su.id = rs.owner_id
LEFT JOIN auth_user ru ON ru.id = r.owner_id
WHERE r.streams_rule_type <> '';
"""

KEY = ",\n       r.id::text || '-' || coalesce(m.id, 0)::text AS streams_rule_key"

FORWARD = "CREATE OR REPLACE VIEW dba_streams_rules AS" + SELECT.format(key=KEY)
# CREATE OR REPLACE cannot drop a column: the view is made again as it was.
BACKWARD = "DROP VIEW dba_streams_rules;\nCREATE VIEW dba_streams_rules AS" + SELECT.format(key="")


class Migration(migrations.Migration):
    dependencies = [("rules", "0004_sql_functions")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
