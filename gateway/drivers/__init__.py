"""One driver per link type; the runner and services look drivers up here."""

from __future__ import annotations

from gateway.drivers.base import Driver


def driver_class(link_type: str) -> type[Driver]:
    from gateway.drivers.amqp import AmqpDriver
    from gateway.drivers.mqtt import MqttDriver
    from gateway.drivers.nats import NatsDriver
    from gateway.drivers.redis import RedisDriver

    classes: dict[str, type[Driver]] = {
        "AMQP": AmqpDriver,
        "MQTT": MqttDriver,
        "NATS": NatsDriver,
        "REDIS": RedisDriver,
    }
    try:
        return classes[link_type]
    except KeyError:
        raise ValueError(f"Unknown link type {link_type!r}.") from None
