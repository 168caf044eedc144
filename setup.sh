#!/usr/bin/env bash
# Install pallas-autograder into a venv beside this script, with the exact pins of
# the JAX release the course grades on.
#
#   ./setup.sh                 grading, instructor and TA tools, on the newest supported
#                              JAX release (or the one release a built zip carries)
#   ./setup.sh --jax 0.10.2    the same on another supported release
#   ./setup.sh --test          also the test extras (pytest, playwright), as root on
#                              Debian/Ubuntu chromium and libatomic1 for the browser tests,
#                              and .venv-jax-<other release> for the tests marked `releases`
#   ./setup.sh --test --no-other   the test extras without the second release's venv
#
# jax 0.12 needs Python >= 3.12 (jaxlib 0.10.2 has wheels for 3.11-3.14), so the venv
# is made from a Python 3.12 or newer: one on PATH, else one under pyenv, else (as
# root) Debian/Ubuntu's python3.13/python3.12 package, else deadsnakes' on Ubuntu
# (Gradescope's Ubuntu 22.04 image: its system python3 is 3.10 and Gradescope's own
# harness needs it, so the new one goes beside it, never replacing it).
# Idempotent: a second run only checks.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
testing=""; other=1; jax=""
while [ $# -gt 0 ]; do
  case "$1" in
    --test) testing=1 ;;
    --no-other) other="" ;;
    --jax) jax="${2:?--jax needs a release, e.g. --jax 0.10.2}"; shift ;;
    --jax=*) jax="${1#--jax=}" ;;
    *) echo "setup.sh: unknown option $1 (see the comment at the top of setup.sh)" >&2; exit 2 ;;
  esac
  shift
done

# The supported releases are the lock files requirements/jax-<release>.txt (a built
# zip carries only its course's).
releases="$(cd "$here/requirements" && ls jax-*.txt | sed 's/^jax-//; s/\.txt$//' | sort -V)"
newest="$(echo "$releases" | tail -n 1)"
[ -n "$jax" ] || jax="$newest"
if ! echo "$releases" | grep -qx "$jax"; then
  echo "setup.sh: jax $jax is not a release this grader supports (supported: $(echo $releases))" >&2
  exit 2
fi

good_python() {   # Python >= 3.12 with venv and ssl (pip needs ssl; a pyenv build may lack it)
  "$1" -c 'import sys, venv, ssl; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1
}

find_python() {
  local cand
  for cand in "${PYTHON:-}" python3.13 python3.12 python3; do
    [ -n "$cand" ] && command -v "$cand" >/dev/null 2>&1 && good_python "$(command -v "$cand")" &&
      { command -v "$cand"; return 0; }
  done
  local roots="${PYENV_ROOT:-} $HOME/.pyenv /root/.pyenv /opt/pyenv"
  for cand in $(for r in $roots; do ls -d "$r"/versions/3.1[2-9]*/bin/python3 2>/dev/null; done | sort -V); do
    good_python "$cand" && { echo "$cand"; return 0; }
  done
  return 1
}

quiet() {   # run a step silently; when it fails, say which and its last line of output
  local log
  log="$("$@" 2>&1)" && return 0
  log="$(printf '%s\n' "$log" | grep -v '^[[:space:]]*$' | tail -n 1)"
  echo "setup.sh: '$*' failed: ${log:-(no output)}" >&2
  return 1
}

install_python() {   # as root, from the distribution, else deadsnakes (Ubuntu)
  export DEBIAN_FRONTEND=noninteractive
  quiet apt-get update -qq || true
  local v
  for v in 3.13 3.12; do
    # Not found is the expected answer on most releases: no message for it.
    if apt-get install -y -qq "python$v" "python$v-venv" >/dev/null 2>&1; then return 0; fi
  done
  if grep -qi ubuntu /etc/os-release 2>/dev/null; then
    # Gradescope's image (Ubuntu 22.04): its build log then says which step failed and why.
    quiet apt-get install -y -qq software-properties-common &&
      quiet add-apt-repository -y ppa:deadsnakes/ppa && quiet apt-get update -qq &&
      quiet apt-get install -y -qq python3.12 python3.12-venv && return 0
  fi
  return 1
}

py="$(find_python || true)"
if [ -z "$py" ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "setup.sh: no Python >= 3.12 found; installing one beside the system python" >&2
  install_python || true
  py="$(find_python || true)"
fi
if [ -z "$py" ]; then
  cat >&2 <<'EOF'
setup.sh: needs Python 3.12 or newer (jax 0.12 cannot be imported on 3.11), with venv and ssl.
Install one beside the system Python, then run ./setup.sh again:
  Debian 13:           apt install python3.13-venv
  Ubuntu 24.04:        apt install python3.12-venv
  Ubuntu 22.04:        add-apt-repository ppa:deadsnakes/ppa && apt install python3.12-venv
  Debian 12, others:   pyenv install 3.12   (Debian 12's apt has no 3.12)
or point at one: PYTHON=/path/to/python3.12 ./setup.sh
EOF
  exit 1
fi

make_venv() {   # make_venv DIR RELEASE EXTRAS
  local venv="$1" release="$2" extras="$3"
  if [ ! -x "$venv/bin/python" ] || ! good_python "$venv/bin/python"; then
    rm -rf "$venv"
    "$py" -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/requirements/jax-$release.txt"
  # A regular (not editable) install: setuptools warns about every editable mode.
  # The grader's child imports the package the grader itself runs from (see
  # confinement.python_command), so a checkout's edits apply without reinstalling.
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$here$extras"
  "$venv/bin/python" -c "import jax, autograder; assert jax.__version__ == '$release', jax.__version__"
}

# The instructor and TA tools (nbformat, pyyaml, markdown-it-py, datasketch) are small
# pure-Python packages: every checkout gets them. The Gradescope zip installs only what
# grading needs.
if [ -f "$here/assignment.txt" ]; then extras=""; else extras="[instructor,review]"; fi
[ -n "$testing" ] && extras="[instructor,review,test]"
make_venv "$here/.venv" "$jax" "$extras"
if [ -n "$testing" ] && [ -n "$other" ]; then
  for r in $releases; do
    [ "$r" = "$jax" ] || { make_venv "$here/.venv-jax-$r" "$r" "[test]"; echo "setup.sh: $here/.venv-jax-$r has jax $r"; }
  done
fi
if [ -n "$testing" ] && { ! command -v chromium >/dev/null 2>&1 || ! ldconfig -p 2>/dev/null | grep -q libatomic.so.1; } &&
   command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  # The HTML report's browser test drives Debian's Chromium (Playwright uses it; it downloads
  # no browser of its own). Playwright's bundled node driver needs libatomic.so.1, which a
  # fresh Debian 12 root lacks. Without them the browser tests skip and say why.
  echo "setup.sh: installing chromium and libatomic1 for the browser tests" >&2
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -qq chromium libatomic1 >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium libatomic1 >/dev/null 2>&1; }; } ||
    echo "setup.sh: chromium could not be installed; the browser tests will skip" >&2
fi
if [ "$(id -u)" = 0 ]; then
  # Student code runs as an unprivileged user; create it and check it can start the grader's child.
  "$here/.venv/bin/python" -m autograder.gradescope.install
fi
echo "setup.sh: ready ($here/.venv, $("$here/.venv/bin/python" --version), jax $jax)"
