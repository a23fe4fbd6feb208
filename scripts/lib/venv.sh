# Sourced by the scripts: create .venv and install the project into it when needed.
# ensure_venv [EXTRA]: install `-e .[EXTRA]` (or `-e .`) unless pyproject.toml is unchanged
# since the last install with that extra.
ensure_venv() {
    local extra="${1:-}"
    local spec="."
    [ -n "$extra" ] && spec=".[$extra]"
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
        .venv/bin/python -m pip install -q --upgrade pip
    fi
    local stamp=".venv/.raftka-installed-${extra:-base}"
    local digest
    digest=$(sha256sum pyproject.toml | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
        .venv/bin/python -m pip install -q -e "$spec"
        echo "$digest" > "$stamp"
    fi
}
