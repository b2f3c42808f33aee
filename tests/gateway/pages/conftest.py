"""Gateway page fixtures: session-logged-in clients per role (the pages suite's) and the
gateway of the API suite's fixtures."""

from __future__ import annotations

from tests.gateway.api.conftest import (  # noqa: F401  (shared with the gateway API tests)
    amqp_link,
    default_agent,
    foreign_queue,
    gw_queues,
    outbound_job,
)
from tests.pages.conftest import (  # noqa: F401  (shared with the pages suite)
    _fast_passwords,
    _role_groups,
    admin_client,
    monitor_client,
    operator_client,
)
