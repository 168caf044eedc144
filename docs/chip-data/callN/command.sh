#!/bin/bash
# Chip call N (session 8: the two corpus kernels this session added, and base2_logsumexp.py against the scaled cases' own tolerance), on the lent v5e:
# `bash docs/chip-data/callN/command.sh` from the checkout's root, carrying .chip47 (call K's wheels).
# skip.json lists every other file (calls E, K and L ran them).
# The grader is installed from call K's wheels as the TPU guide installs it.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
L=/tmp/callN/l
rm -rf /tmp/callN; mkdir -p $L
pack() { tar czf $OUT/callN.tgz.part -C /tmp/callN l 2>/dev/null && mv $OUT/callN.tgz.part $OUT/callN.tgz; }
echo "bash docs/chip-data/callN/command.sh" > $L/command.txt
export PYTHONUSERBASE=/tmp/callN-user
(cd .chip47/route && PIP_CONFIG_FILE=/dev/null timeout 90 python3 -m pip install --user --no-index \
  --find-links wheels 'pallas-autograder[review]' 2>&1 | tail -2) > $L/install.log 2>&1
echo "install rc=$? at $(( $(date +%s) - T0 )) s" >> $L/phases.log
timeout 300 python3 benchmarks/chip_check.py run -o $L/outcomes --phases env,outcomes \
  --outcomes-skip docs/chip-data/callN/skip.json --call-s 20 --budget-s 280 --device tpu > $L/outcomes.log 2>&1
echo "outcomes rc=$? at $(( $(date +%s) - T0 )) s" >> $L/phases.log
find $L -name divergence -type d -prune -exec rm -rf {} +
pack
cat $L/phases.log
