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

# PySpark 4 runs on a Java 17+ runtime. Spark jobs come in later issues, so a missing Java is
# reported, not fatal, unless the caller says "required".
ensure_java() {
    local need=${1:-optional}
    command -v java >/dev/null 2>&1 && return
    echo "==> installing a Java runtime for Spark (default-jre-headless)"
    if apt_install default-jre-headless; then
        return
    fi
    if [ "$need" = required ]; then
        echo "Could not install Java (needed by Spark)." >&2
        return 1
    fi
    echo "warning: no Java runtime; Spark jobs will not run until one is installed." >&2
}
