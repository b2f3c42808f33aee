from rest_framework.pagination import LimitOffsetPagination as DrfLimitOffsetPagination


class LimitOffsetPagination(DrfLimitOffsetPagination):
    """``?limit=`` is capped so one request cannot pull a whole message table."""

    max_limit = 1000
