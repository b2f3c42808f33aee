"""The seed's conditions (spec/rules.md §3.4 to §3.6, §7.4), copied verbatim as fixed inputs, and
builders for the messages of its test tables (source database DBS1.EXAMPLE.COM and tag NULL unless
a test says otherwise)."""

from __future__ import annotations

from typing import Any

from rules.lang import DdlLCR, RowLCR, UserMessage

G1 = "(:dml.is_null_tag() = 'Y' )"
G2 = "(:ddl.is_null_tag() = 'Y' )"
G3 = "(( :dml.get_source_database_name()>=' ' OR :dml.get_source_database_name()<=' ') )"
G4 = "(( :ddl.get_source_database_name()>=' ' OR :ddl.get_source_database_name()<=' ') )"
G5 = "((:dml.get_object_owner() = 'HR') and :dml.is_null_tag() = 'Y' and :dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
G6 = "((:ddl.get_object_owner() = 'HR' or :ddl.get_base_table_owner() = 'HR') and :ddl.is_null_tag() = 'Y' and :ddl.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
G7 = "(((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'LOCATIONS')) and :dml.is_null_tag() = 'Y' and :dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
G8 = "(((:ddl.get_object_owner() = 'HR' and :ddl.get_object_name() = 'COUNTRIES') or (:ddl.get_base_table_owner() = 'HR' and :ddl.get_base_table_name() = 'COUNTRIES')) and :ddl.is_null_tag() = 'Y' and :ddl.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
G9 = "(((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'JOB_HISTORY')) and :dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
G10 = "(((((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'DEPARTMENTS')) and :dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )) and (:dml.get_tag() = HEXTORAW('02')))"
G11 = "(((((:ddl.get_object_owner() = 'HR' and :ddl.get_object_name() = 'DEPARTMENTS') or (:ddl.get_base_table_owner() = 'HR' and :ddl.get_base_table_name() = 'DEPARTMENTS')) and :ddl.get_source_database_name() = 'DBS1.EXAMPLE.COM' )) and (:ddl.get_tag() = HEXTORAW('02')))"
G15 = ":\"VAR$_52\".region = 'EUROPE' AND :\"VAR$_52\".priority = '1'"
# G12 to G14: the three subset rules of hr.regions, region_id=2 (§3.5.1)
G12_SUBSET_INSERT = ":dml.get_object_owner()='HR' AND :dml.get_object_name()='REGIONS' AND :dml.is_null_tag()='Y' AND :dml.get_source_database_name()='DBS1.EXAMPLE.COM' AND :dml.get_command_type() IN ('UPDATE','INSERT') AND (:dml.get_value('NEW','\"REGION_ID\"') IS NOT NULL) AND (:dml.get_value('NEW','\"REGION_ID\"').AccessNumber()=2) AND (:dml.get_command_type()='INSERT' OR ((:dml.get_value('OLD','\"REGION_ID\"') IS NOT NULL) AND (((:dml.get_value('OLD','\"REGION_ID\"').AccessNumber() IS NOT NULL) AND NOT (:dml.get_value('OLD','\"REGION_ID\"').AccessNumber()=2)) OR ((:dml.get_value('OLD','\"REGION_ID\"').AccessNumber() IS NULL) AND NOT EXISTS (SELECT 1 FROM SYS.DUAL WHERE (:dml.get_value('OLD','\"REGION_ID\"').AccessNumber()=2))))))"
G13_SUBSET_UPDATE = ":dml.get_object_owner()='HR' AND :dml.get_object_name()='REGIONS' AND :dml.is_null_tag()='Y' AND :dml.get_source_database_name()='DBS1.EXAMPLE.COM' AND :dml.get_command_type()='UPDATE' AND (:dml.get_value('NEW','\"REGION_ID\"') IS NOT NULL) AND (:dml.get_value('OLD','\"REGION_ID\"') IS NOT NULL) AND (:dml.get_value('OLD','\"REGION_ID\"').AccessNumber()=2) AND (:dml.get_value('NEW','\"REGION_ID\"').AccessNumber()=2)"
G14_SUBSET_DELETE = ":dml.get_object_owner()='HR' AND :dml.get_object_name()='REGIONS' AND :dml.is_null_tag()='Y' AND :dml.get_source_database_name()='DBS1.EXAMPLE.COM' AND :dml.get_command_type() IN ('UPDATE','DELETE') AND (:dml.get_value('OLD','\"REGION_ID\"') IS NOT NULL) AND (:dml.get_value('OLD','\"REGION_ID\"').AccessNumber()=2) AND (:dml.get_command_type()='DELETE' OR ((:dml.get_value('NEW','\"REGION_ID\"') IS NOT NULL) AND (((:dml.get_value('NEW','\"REGION_ID\"').AccessNumber() IS NOT NULL) AND NOT (:dml.get_value('NEW','\"REGION_ID\"').AccessNumber()=2)) OR ((:dml.get_value('NEW','\"REGION_ID\"').AccessNumber() IS NULL) AND NOT EXISTS (SELECT 1 FROM SYS.DUAL WHERE (:dml.get_value('NEW','\"REGION_ID\"').AccessNumber()=2))))))"
# The apply_msg message rule of §3.6 (the seed's L765)
AMERICAS = ":\"VAR$_56\".region = 'AMERICAS' AND :\"VAR$_56\".priority = '2'"
# The positive schema rule P of the rule-set tests (§3.4.2, apply, DML from dbs1): the seed prints
# the same text as G5.
SCHEMA_HR_DML = G5

SRC = "DBS1.EXAMPLE.COM"
REGION_PRI_MSG = "STRMADMIN.REGION_PRI_MSG"


def row(
    command: str = "INSERT",
    owner: str = "HR",
    name: str = "COUNTRIES",
    *,
    tag: bytes | None = None,
    src: str | None = SRC,
    old: dict[str, Any] | None = None,
    new: dict[str, Any] | None = None,
) -> RowLCR:
    return RowLCR(src, command, owner, name, tag, old or {}, new or {})


def ddl(
    command: str,
    object_type: str,
    owner: str | None,
    name: str | None,
    *,
    base_owner: str | None = None,
    base_name: str | None = None,
    tag: bytes | None = None,
    src: str | None = SRC,
) -> DdlLCR:
    return DdlLCR(
        src, command, object_type, owner, name, base_owner, base_name, f"{command} ...", tag
    )


def region_msg(region: str | None, priority: int | None) -> UserMessage:
    return UserMessage(REGION_PRI_MSG, {"region": region, "priority": priority, "message": "m"})


ALL_CONDITIONS = {
    "G1": G1,
    "G2": G2,
    "G3": G3,
    "G4": G4,
    "G5": G5,
    "G6": G6,
    "G7": G7,
    "G8": G8,
    "G9": G9,
    "G10": G10,
    "G11": G11,
    "G12": G12_SUBSET_INSERT,
    "G13": G13_SUBSET_UPDATE,
    "G14": G14_SUBSET_DELETE,
    "G15": G15,
    "AMERICAS": AMERICAS,
}
