# Sourced by the scripts (setup, tests, example, benchmarks): the Python they use is a
# virtualenv of svar2's own, because system Pythons such as Debian 12's refuse
# `pip install` outside one (PEP 668, "externally-managed-environment"). It sees the
# interpreter's own packages (--system-site-packages), so nothing installed there
# already is installed again. `scripts/setup.sh --test` creates it; SVAR2_VENV moves it.
SVAR2_VENV=${SVAR2_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/svar2/venv}
if [[ -x $SVAR2_VENV/bin/python3 ]]; then
  export VIRTUAL_ENV=$SVAR2_VENV PATH="$SVAR2_VENV/bin:$PATH"
fi
