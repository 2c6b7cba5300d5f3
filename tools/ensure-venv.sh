#!/bin/sh
# Make sure .venv exists, was made with the interpreter the user asked for, and holds an
# up-to-date install of the package. Called by the Makefile; every message starts "make:".
#
#   tools/ensure-venv.sh PYTHON CHOSEN VENV STAMP
#
# PYTHON   the interpreter to build .venv with (python3 unless the user set PYTHON=)
# CHOSEN   1 when the user named PYTHON (on the command line or in the environment): an existing
#          .venv made with another interpreter is then rebuilt, not silently kept
# VENV     the virtualenv directory (.venv)
# STAMP    a file touched after a successful install; older than pyproject.toml = reinstall
#
# PIP_INSTALL (environment) is the install command, run inside VENV; VENV_ARGS extra arguments
# to `python -m venv`. The Makefile's tests set both to stay fast and offline.
set -u
python=$1 chosen=$2 venv=$3 stamp=$4

say() { printf 'make: %s\n' "$*" >&2; }

interpreter_path() {  # the real file behind an interpreter, as that interpreter sees itself
    "$1" -c 'import os, sys; print(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))' 2>/dev/null
}

describe() {
    "$1" -c 'import sys; print("Python %d.%d.%d" % sys.version_info[:3])' 2>/dev/null
}

if ! command -v "$python" >/dev/null 2>&1; then
    say "PYTHON=$python: no such interpreter (not found on PATH and not an executable file)."
    say "Name one that exists, e.g. make PYTHON=python3.12 ... or PYTHON=/usr/bin/python3.11"
    exit 1
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    say "PYTHON=$python is $(describe "$python" || echo 'not a working Python'); anole_jobs needs Python 3.11 or newer."
    say "Name another interpreter, e.g. make PYTHON=python3.12 ..."
    exit 1
fi

if [ -x "$venv/bin/python" ] && [ "$chosen" = 1 ]; then
    wanted=$(interpreter_path "$python")
    have=$(interpreter_path "$venv/bin/python")
    if [ "$wanted" != "$have" ]; then
        say "$venv was made with ${have:-an interpreter that no longer runs} ($(describe "$venv/bin/python" || echo '?'));"
        say "rebuilding it with PYTHON=$python ($wanted, $(describe "$python"))."
        rm -rf "$venv"
    fi
fi

if [ ! -x "$venv/bin/python" ]; then
    say "creating $venv with $python ($(describe "$python"))"
    # shellcheck disable=SC2086  # VENV_ARGS is a list of words
    "$python" -m venv ${VENV_ARGS:-} "$venv" || { say "could not create $venv with $python"; exit 1; }
fi

if [ -f "$stamp" ] && [ ! pyproject.toml -nt "$stamp" ]; then
    exit 0
fi

log="$venv/pip-install.log"
install=${PIP_INSTALL:-"$venv/bin/python -m pip install --disable-pip-version-check -e '.[dev]'"}
say "installing anole_jobs with its dev extras into $venv (quietly; this takes a minute the first time)"
if ! sh -c "$install" >"$log" 2>&1; then
    cat "$log" >&2
    say "the install failed (pip's output above, also in $log)"
    exit 1
fi
touch "$stamp"
