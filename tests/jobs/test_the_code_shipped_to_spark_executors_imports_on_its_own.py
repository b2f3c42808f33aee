"""The zip given to ``spark-submit --py-files`` holds every module the executors import: a
module the engine starts importing must be added to it, or each Spark job that runs a
transformation fails on the executors with ModuleNotFoundError (as core/storable.py once did).
Imported here from the zip alone, in a process that does not see the project."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from jobs.spark_submit import code_zip


def test_every_shipped_module_imports_from_the_zip_alone(tmp_path, settings):
    settings.VAR_DIR = tmp_path
    zip_path = code_zip()
    with zipfile.ZipFile(zip_path) as z:
        modules = [
            name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
            for name in z.namelist()
            if name.endswith(".py")
        ]
    script = (
        "import importlib, sys\n"
        f"sys.path.insert(0, {str(zip_path)!r})\n"
        f"for m in {sorted(modules)!r}:\n"
        "    importlib.import_module(m)\n"
        "    assert importlib.import_module(m).__file__.startswith(sys.path[0]), m\n"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-c", script], cwd=tmp_path, capture_output=True, text=True
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert "queues.engine" in modules and "jobs.spark.sink" in modules
