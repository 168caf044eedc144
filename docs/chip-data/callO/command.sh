#!/bin/bash
# Chip call O (session 9: the four corpus kernels this session added, written apart from the project: a K loop one step short, a K/V map that follows the query block, 128-lane blocks of 256-wide softmax rows, (the DMA wait on the wrong semaphore is left out: it hangs TPU interpret mode, and a hung chip would end the call)), on the lent v5e:
# `bash docs/chip-data/callO/command.sh` from the checkout's root, carrying .chip47 (call K's wheels).
# skip.json lists every other file (calls E, K, L and N ran them).
# The grader is installed from call K's wheels as the TPU guide installs it.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
L=/tmp/callO/l
rm -rf /tmp/callO; mkdir -p $L
pack() { tar czf $OUT/callO.tgz.part -C /tmp/callO l 2>/dev/null && mv $OUT/callO.tgz.part $OUT/callO.tgz; }
echo "bash docs/chip-data/callO/command.sh" > $L/command.txt
export PYTHONUSERBASE=/tmp/callO-user
(cd .chip47/route && PIP_CONFIG_FILE=/dev/null timeout 90 python3 -m pip install --user --no-index \
  --find-links wheels 'pallas-autograder[review]' 2>&1 | tail -2) > $L/install.log 2>&1
echo "install rc=$? at $(( $(date +%s) - T0 )) s" >> $L/phases.log
timeout 300 python3 benchmarks/chip_check.py run -o $L/outcomes --phases env,outcomes \
  --outcomes-skip docs/chip-data/callO/skip.json --call-s 20 --budget-s 280 --device tpu > $L/outcomes.log 2>&1
echo "outcomes rc=$? at $(( $(date +%s) - T0 )) s" >> $L/phases.log
find $L -name divergence -type d -prune -exec rm -rf {} +
pack
cat $L/phases.log
