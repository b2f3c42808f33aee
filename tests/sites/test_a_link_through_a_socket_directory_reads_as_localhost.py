"""A database link through a Unix socket directory (as the demo's link to the embedded server):
DBA_DB_LINKS, the link's pages and the API show ``localhost:PORT/DB (socket /dir)``, never the
directory as if it were a host name; the stored host stays the directory."""

from __future__ import annotations

from django.db import connection

from sites.models import DatabaseLink
from tests.sites.helpers import SITE_USER


def test_a_socket_link_shows_localhost_and_its_socket_everywhere(
    make_link, site, monitor_api, monitor_client
):
    socket_dir = str(site.pg.dir)
    # The service connects through the socket: the link is real, not a row written by hand.
    link = make_link("SOCKET_B", host=socket_dir)
    make_link("TCP_B")
    expected = f"localhost:{site.port}/site_b (socket {socket_dir})"

    assert DatabaseLink.objects.get(pk=link.pk).host == socket_dir
    rows = monitor_api.get("/api/status/dba_db_links/").json()["results"]
    assert {r["db_link"]: r["host"] for r in rows} == {
        "SOCKET_B": expected,
        "TCP_B": f"127.0.0.1:{site.port}/site_b",
    }
    # ALL_ and USER_DB_LINKS (filtered per console user over the same rows) say the same.
    with connection.cursor() as cur:
        for view in ("all_db_links", "user_db_links"):
            cur.execute(f"SELECT host FROM {view} WHERE db_link = 'SOCKET_B'")
            assert cur.fetchall() == [(expected,)], view

    body = monitor_api.get(f"/api/db-links/{link.pk}/").json()
    assert (body["host"], body["connect"], body["username"]) == (socket_dir, expected, SITE_USER)

    page = monitor_client.get(link.get_absolute_url()).content.decode()
    assert f'<dd class="col-7" id="link-connect">{expected}</dd>' in page
    listing = monitor_client.get("/sites/").content.decode()
    assert expected in listing
