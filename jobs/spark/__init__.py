"""The Spark side of bulk propagation jobs: a PySpark application (``app.py``) with a Python
data source that reads a source queue's messages (``source.py``) and a writer that puts them into
the destination queues exactly once (``sink.py``).

Nothing here imports Django: ``spark-submit`` runs these modules with a JSON spec that the
Django side (``jobs/spark_submit.py``) built, and the executors import them from a zip.
"""
