#!/usr/bin/env bash
# Install pallas-autograder into a venv beside this script, with pinned dependencies.
#
#   ./setup.sh          grading dependencies (what Gradescope runs)
#   ./setup.sh --test   also the test extras (pytest, playwright) and, as root on
#                       Debian/Ubuntu, the chromium package for the browser test
#
# On Gradescope's Ubuntu 22.04 image the system python3 is 3.10 and Gradescope's
# own harness needs it untouched, so a separate Python >= 3.11 is installed
# beside it (deadsnakes), never replacing it. Anywhere that already has
# Python >= 3.11 the venv is made from that. Idempotent: a second run only checks.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
# The instructor and TA tools (nbformat, pyyaml, markdown-it-py, datasketch) are small
# pure-Python packages: every checkout gets them. The Gradescope zip's own setup installs
# only what grading needs (gradescope/build.py writes it).
extras="[instructor,review]"
testing=""
[ "${1:-}" = "--test" ] && testing=1 && extras="[instructor,review,test]"

find_python() {
  for cand in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
    [ -n "$cand" ] || continue
    if command -v "$cand" >/dev/null 2>&1 &&
       "$cand" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      command -v "$cand"; return 0
    fi
  done
  return 1
}

py="$(find_python || true)"
if [ -z "$py" ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "setup.sh: no Python >= 3.11 found; installing python3.11 beside the system python" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    if ! apt-get install -y -qq python3.11 python3.11-venv >/dev/null 2>&1; then
      apt-get install -y -qq software-properties-common >/dev/null
      add-apt-repository -y ppa:deadsnakes/ppa >/dev/null
      apt-get update -qq
      apt-get install -y -qq python3.11 python3.11-venv
    fi
    py="$(find_python)"
  else
    echo "setup.sh: needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
    exit 1
  fi
fi

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  rm -rf "$venv"
  "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/requirements.txt"
# A regular (not editable) install: setuptools warns about every editable mode.
# The grader's child imports the package the grader itself runs from (see
# confinement.python_command), so a checkout's edits apply without reinstalling.
"$venv/bin/python" -m pip install -q --disable-pip-version-check "$here$extras"
"$venv/bin/python" -c 'import jax, autograder; assert jax.__version__ == "0.10.2", jax.__version__'
if [ -n "$testing" ] && { ! command -v chromium >/dev/null 2>&1 || ! ldconfig -p 2>/dev/null | grep -q libatomic.so.1; } && command -v apt-get >/dev/null 2>&1 &&
   [ "$(id -u)" = 0 ]; then
  # The HTML report's browser test drives Debian's Chromium (Playwright uses it; it downloads
  # no browser of its own). Playwright's bundled node driver needs libatomic.so.1, which a
  # fresh Debian 12 root lacks. Without them the browser tests skip and say why.
  echo "setup.sh: installing chromium and libatomic1 for the browser tests" >&2
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -qq chromium libatomic1 >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium libatomic1 >/dev/null 2>&1; }; } ||
    echo "setup.sh: chromium could not be installed; the browser test will skip" >&2
fi
if [ "$(id -u)" = 0 ]; then
  # Student code runs as an unprivileged user; create it and check it can start the grader's child.
  "$venv/bin/python" -m autograder.gradescope.install
fi
echo "setup.sh: ready ($venv, $("$venv/bin/python" --version))"
