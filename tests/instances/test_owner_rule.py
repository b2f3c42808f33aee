"""Oracle's ownership rule as one pure function (no database)."""

from __future__ import annotations

import pytest

from instances.ownership import owner_for


@pytest.mark.parametrize(
    ("primary", "secondary", "current", "live", "owner"),
    [
        (1, 2, 0, {1, 2, 3}, 1),  # the primary while it is up
        (1, 2, 1, {2, 3}, 2),  # the secondary when the primary is down
        (1, 2, 2, {1, 2, 3}, 1),  # back to the primary when it returns
        (1, 2, 2, {3}, 3),  # both down: any live instance
        (1, 2, 0, {4, 3}, 3),  # ... the lowest-numbered one when the owner is gone too
        (1, 2, 3, {2, 3}, 2),  # the secondary returns: it takes ownership back
        (1, 2, 3, {1, 2, 3}, 1),  # then the primary does
        (1, 2, 3, set(), 0),  # nobody up: no owner
        (0, 0, 2, {1, 2}, 2),  # no preference: the owner keeps it while it is up
        (0, 0, 2, {1}, 1),  # ... and any live instance takes it when it goes
        (0, 2, 1, {1, 2}, 2),  # only a secondary named: it owns while up
    ],
)
def test_the_owner_follows_oracles_rule(primary, secondary, current, live, owner):
    assert (
        owner_for(primary=primary, secondary=secondary, current=current, live=live).inst_id == owner
    )
