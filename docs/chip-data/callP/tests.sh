#!/bin/bash
# Call P's tests marked tpu again (its command first ran them with the project's addopts, which name
# pytest-xdist, not installed on the TPU host: "unrecognized arguments: -n"; command.sh now passes
# -o addopts=''), after the wrong-semaphore kernel hung the chip's worker.
export PYTHONUSERBASE=/tmp/callP-user
(cd .chip47/route && PIP_CONFIG_FILE=/dev/null timeout 90 python3 -m pip install --user --no-index \
  --find-links wheels 'pallas-autograder[review]' 2>&1 | tail -1)
mkdir -p $OUT/p && timeout 200 python3 -m pytest -q -p no:cacheprovider -o addopts='' -m tpu tests > $OUT/p/tpu-tests-again.log 2>&1
echo "tpu tests rc=$?"; tail -5 $OUT/p/tpu-tests-again.log
