from django.apps import AppConfig


class ParallelConfig(AppConfig):
    """Parallel queues (seed 003, AQ on RAC): a logical queue made of N physical queues, each in
    its own queue table with ring-assigned primary and secondary instances, reached through the
    instance that owns it. The queues app owns the queues; this app owns the mapping."""

    name = "parallel"
    verbose_name = "Parallel queues"
