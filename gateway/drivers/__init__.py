"""One driver per link type; the runner and services look drivers up here."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from core import crypto
from gateway.drivers.base import Driver

if TYPE_CHECKING:
    from gateway.models import Link

# Link type -> "module:class"; imported on first use, so a client library loads only when a
# link of its type is used.
DRIVERS: dict[str, str] = {
    "AMQP": "gateway.drivers.amqp:AmqpDriver",
    "MQTT": "gateway.drivers.mqtt:MqttDriver",
    "NATS": "gateway.drivers.nats:NatsDriver",
    "REDIS": "gateway.drivers.redis:RedisDriver",
}


def driver_class(link_type: str) -> type[Driver]:
    try:
        module, name = DRIVERS[link_type].split(":")
    except KeyError:
        raise ValueError(f"Unknown link type {link_type!r}.") from None
    return getattr(importlib.import_module(module), name)


def link_driver(link: Link, *, client_id: str = "", timeout: float = 5.0) -> Driver:
    """A driver for ``link`` with its password decrypted (the agent and Test connection only)."""
    cls = driver_class(link.link_type)
    props = dict(link.properties)
    if link.outbound_log_queue:
        props["outbound_log_queue"] = link.outbound_log_queue
    return cls(
        properties=props,
        options=dict(link.options),
        secret=crypto.decrypt(link.password_encrypted) or None,
        client_id=client_id or f"mgw-{link.name.lower()}",
        timeout=timeout,
    )
