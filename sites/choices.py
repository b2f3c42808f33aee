from django.db import models


class SslMode(models.TextChoices):
    """libpq's sslmode values, weakest first: how a database link's connection uses TLS."""

    DISABLE = "disable", "disable (no TLS)"
    ALLOW = "allow", "allow (TLS if the server insists)"
    PREFER = "prefer", "prefer (TLS when the server offers it)"
    REQUIRE = "require", "require (TLS, server not verified)"
    VERIFY_CA = "verify-ca", "verify-ca (TLS, server certificate checked against the root)"
    VERIFY_FULL = "verify-full", "verify-full (TLS, certificate and host name checked)"
