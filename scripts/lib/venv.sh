# Sourced by the scripts: create .venv and install the project into it when needed.
# ensure_venv [EXTRA]: install `-e .[EXTRA]` (or `-e .`) unless neither pyproject.toml nor
# the install command changed since the last install with that extra.

# The arguments of .venv/bin/python that install the project with EXTRA, one a line.
venv_install_command() {
    local spec="."
    [ -n "${1:-}" ] && spec=".[$1]"
    printf '%s\n' -m pip install -q -e "$spec"
}

# What the stamp of an install with EXTRA holds: a digest of pyproject.toml and of the
# install command, so a .venv installed another way is installed again.
venv_stamp() {
    { cat pyproject.toml; venv_install_command "${1:-}"; } | sha256sum | cut -d' ' -f1
}

ensure_venv() {
    local extra="${1:-}"
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
        .venv/bin/python -m pip install -q --upgrade pip
    fi
    local stamp=".venv/.raftka-installed-${extra:-base}"
    local digest
    digest=$(venv_stamp "$extra")
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
        local command
        mapfile -t command < <(venv_install_command "$extra")
        .venv/bin/python "${command[@]}"
        echo "$digest" > "$stamp"
    fi
}
