"""One driver per link type; the runner and services look drivers up here."""

from __future__ import annotations

import importlib

from gateway.drivers.base import Driver

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
