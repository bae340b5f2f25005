"""The test servers' ports: no two sites of one test run share an origin."""

from urllib.parse import urlsplit

from browser import free_port, http_server

# Draws enough that the system's random free ports repeat: from Linux's default range
# of 28,232 (binding takes the even half first), 500 draws repeat one with probability
# 1 - exp(-500·499 / (2·28,232)) > 0.98, and above 0.9998 from the even half.
DRAWS = 500


def test_no_two_sites_are_served_on_one_port(tmp_path):
    """A port is handed out once: a browser kept across tests would answer a later site
    on an earlier one's port from what that one gave it (its cache, its service worker)."""
    ports = [free_port() for _ in range(DRAWS)]
    with http_server(tmp_path) as url:
        ports.append(urlsplit(url).port)
    assert len(set(ports)) == len(ports)
