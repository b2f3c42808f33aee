"""The built-in STREAMS$_EVALUATION_CONTEXT and the Oracle-named rule views."""

from django.db import migrations

VIEWS = """
CREATE VIEW dba_rules AS
SELECT coalesce(u.username, 'AQADMIN') AS rule_owner,
       r.name AS rule_name,
       r.condition AS rule_condition,
       CASE WHEN ec.id IS NULL THEN NULL ELSE 'SYS' END AS rule_evaluation_context_owner,
       ec.name AS rule_evaluation_context_name,
       r.action_context::text AS rule_action_context,
       r.comment AS rule_comment,
       r.id AS rule_id
FROM rules_rule r
LEFT JOIN rules_evaluationcontext ec ON ec.id = r.evaluation_context_id
LEFT JOIN auth_user u ON u.id = r.owner_id;

CREATE VIEW dba_rule_sets AS
SELECT coalesce(u.username, 'AQADMIN') AS rule_set_owner,
       rs.name AS rule_set_name,
       CASE WHEN ec.id IS NULL THEN NULL ELSE 'SYS' END AS rule_set_eval_context_owner,
       ec.name AS rule_set_eval_context_name,
       rs.comment AS rule_set_comment,
       rs.id AS rule_set_id
FROM rules_ruleset rs
LEFT JOIN rules_evaluationcontext ec ON ec.id = rs.evaluation_context_id
LEFT JOIN auth_user u ON u.id = rs.owner_id;

CREATE VIEW dba_rule_set_rules AS
SELECT coalesce(su.username, 'AQADMIN') AS rule_set_owner,
       rs.name AS rule_set_name,
       coalesce(ru.username, 'AQADMIN') AS rule_owner,
       r.name AS rule_name,
       CASE WHEN m.enabled THEN 'ENABLED' ELSE 'DISABLED' END AS rule_set_rule_enabled,
       CASE WHEN ec.id IS NULL THEN NULL ELSE 'SYS' END AS rule_set_rule_eval_ctx_owner,
       ec.name AS rule_set_rule_eval_ctx_name,
       m.comment AS rule_set_rule_comment,
       m.id AS member_id
FROM rules_rulesetrule m
JOIN rules_ruleset rs ON rs.id = m.rule_set_id
JOIN rules_rule r ON r.id = m.rule_id
LEFT JOIN rules_evaluationcontext ec ON ec.id = r.evaluation_context_id
LEFT JOIN auth_user su ON su.id = rs.owner_id
LEFT JOIN auth_user ru ON ru.id = r.owner_id;

CREATE VIEW dba_evaluation_context_vars AS
SELECT 'SYS'::text AS evaluation_context_owner,
       ec.name AS evaluation_context_name,
       v.name AS variable_name,
       CASE WHEN v.variable_type = 'USER' THEN v.user_type ELSE v.variable_type END
           AS variable_type,
       NULL::text AS variable_value_function,
       NULL::text AS variable_method_function,
       v.id AS variable_id
FROM rules_evaluationcontextvariable v
JOIN rules_evaluationcontext ec ON ec.id = v.context_id;

-- Rules made by the DBMS_STREAMS_ADM-style generators. Clients (capture, propagation, apply)
-- arrive with the propagation issue; until then streams_type/streams_name come from the rule
-- set the rule is in.
CREATE VIEW dba_streams_rules AS
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
       r.id AS rule_id
FROM rules_rule r
LEFT JOIN rules_rulesetrule m ON m.rule_id = r.id
LEFT JOIN rules_ruleset rs ON rs.id = m.rule_set_id
LEFT JOIN auth_user su ON su.id = rs.owner_id
LEFT JOIN auth_user ru ON ru.id = r.owner_id
WHERE r.streams_rule_type <> '';

CREATE VIEW dba_streams_transformations AS
SELECT coalesce(u.username, 'AQADMIN') AS rule_owner,
       r.name AS rule_name,
       'DECLARATIVE TRANSFORMATION'::text AS transform_type,
       nullif(t.from_schema_name, '') AS from_schema_name,
       nullif(t.to_schema_name, '') AS to_schema_name,
       nullif(t.from_table_name, '') AS from_table_name,
       nullif(t.to_table_name, '') AS to_table_name,
       nullif(r.schema_name, '') AS schema_name,
       nullif(r.object_name, '') AS table_name,
       nullif(t.from_column_name, '') AS from_column_name,
       nullif(t.to_column_name, '') AS to_column_name,
       nullif(t.column_name, '') AS column_name,
       t.column_value::text AS column_value,
       t.value_type,
       NULL::text AS user_function_name,
       NULL::text AS subsetting_operation,
       NULL::text AS dml_condition,
       t.declarative_type,
       t.step_number,
       'd' || t.id AS transformation_key
FROM rules_declarativetransformation t
JOIN rules_rule r ON r.id = t.rule_id
LEFT JOIN auth_user u ON u.id = r.owner_id
UNION ALL
SELECT coalesce(u.username, 'AQADMIN'), r.name, 'CUSTOM TRANSFORMATION', NULL, NULL, NULL, NULL,
       nullif(r.schema_name, ''), nullif(r.object_name, ''), NULL, NULL, NULL, NULL, NULL,
       c.function, NULL, NULL, NULL, NULL, 'c' || c.id
FROM rules_customtransformation c
JOIN rules_rule r ON r.id = c.rule_id
LEFT JOIN auth_user u ON u.id = r.owner_id
UNION ALL
SELECT coalesce(u.username, 'AQADMIN'), r.name, 'SUBSET RULE', NULL, NULL, NULL, NULL,
       nullif(r.schema_name, ''), nullif(r.object_name, ''), NULL, NULL, NULL, NULL, NULL, NULL,
       r.subsetting_operation, r.dml_condition, NULL, NULL, 's' || r.id
FROM rules_rule r
LEFT JOIN auth_user u ON u.id = r.owner_id
WHERE r.subsetting_operation <> '';
"""

DROP = """
DROP VIEW IF EXISTS dba_streams_transformations;
DROP VIEW IF EXISTS dba_streams_rules;
DROP VIEW IF EXISTS dba_evaluation_context_vars;
DROP VIEW IF EXISTS dba_rule_set_rules;
DROP VIEW IF EXISTS dba_rule_sets;
DROP VIEW IF EXISTS dba_rules;
"""


def streams_context(apps, schema_editor):
    Context = apps.get_model("rules", "EvaluationContext")
    Variable = apps.get_model("rules", "EvaluationContextVariable")
    ctx, _ = Context.objects.get_or_create(
        name="STREAMS$_EVALUATION_CONTEXT",
        defaults={"builtin": True, "comment": "Oracle-supplied context: :dml and :ddl."},
    )
    Variable.objects.get_or_create(
        context=ctx, name="DML", defaults={"variable_type": "SYS.LCR$_ROW_RECORD"}
    )
    Variable.objects.get_or_create(
        context=ctx, name="DDL", defaults={"variable_type": "SYS.LCR$_DDL_RECORD"}
    )


def drop_streams_context(apps, schema_editor):
    apps.get_model("rules", "EvaluationContext").objects.filter(
        name="STREAMS$_EVALUATION_CONTEXT"
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("rules", "0001_initial")]

    operations = [
        migrations.RunPython(streams_context, drop_streams_context),
        migrations.RunSQL(VIEWS, DROP),
    ]
