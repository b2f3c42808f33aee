"""The instances app's Oracle-named status view: GV$INSTANCE."""

from core.status import StatusView
from instances.models import GvInstance

STATUS_VIEWS = (
    StatusView(
        "gv_instance",
        GvInstance,
        app="Instances",
        description="GV$INSTANCE: the instances (hosts running Celery workers under one "
        "AQ_INSTANCE_NAME), UP while one of their workers beat within "
        "AQ_INSTANCE_HEARTBEAT_LIMIT_S; WORKERS counts those workers.",
    ),
)
