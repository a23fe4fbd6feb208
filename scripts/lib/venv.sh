# Sourced by the scripts: create .venv and install the project into it when needed.
# ensure_venv [EXTRA]: install `-e .[EXTRA]` (or `-e .`) unless neither pyproject.toml nor
# the install command changed since the last install with that extra.
ensure_venv() {
    local extra="${1:-}"
    local spec="."
    [ -n "$extra" ] && spec=".[$extra]"
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
        .venv/bin/python -m pip install -q --upgrade pip
    fi
    local install=(-m pip install -q -e "$spec")
    local stamp=".venv/.raftka-installed-${extra:-base}"
    # The stamp covers how the project is installed as well as what it needs: an .venv made
    # by an older install command is installed again.
    local digest
    digest=$( { cat pyproject.toml; printf '%s\n' "${install[@]}"; } | sha256sum | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
        .venv/bin/python "${install[@]}"
        echo "$digest" > "$stamp"
    fi
}
