from core.status import StatusView
from sites.models import DbaDbLink, GlobalName

_APP = "Sites"

STATUS_VIEWS = (
    StatusView(
        "dba_db_links",
        DbaDbLink,
        hidden=("link_id",),
        app=_APP,
        description="Database links to other sites: owner (PUBLIC when none), name, the user "
        "at the remote site and host:port/database (never the password).",
    ),
    StatusView(
        "global_name",
        GlobalName,
        hidden=("site_id",),
        app=_APP,
        description="This database's global name (AQ_GLOBAL_NAME), as other sites' links read it.",
    ),
)
