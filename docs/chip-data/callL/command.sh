#!/bin/bash
# Chip call L (issue 47: every corpus kernel on a chip), on the lent v5e:
# `bash docs/chip-data/callL/command.sh` from the checkout's root, carrying .chip47 (call K's wheels).
# The outcomes of the corpus files no chip ran yet: calls E and K ran the others (skip.json lists
# their files). The grader is installed from call K's wheels as the TPU guide installs it.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
L=/tmp/callL/l
rm -rf /tmp/callL; mkdir -p $L
pack() { tar czf $OUT/callL.tgz.part -C /tmp/callL l 2>/dev/null && mv $OUT/callL.tgz.part $OUT/callL.tgz; }
echo "bash docs/chip-data/callL/command.sh" > $L/command.txt
export PYTHONUSERBASE=/tmp/callL-user
(cd .chip47/route && PIP_CONFIG_FILE=/dev/null timeout 90 python3 -m pip install --user --no-index \
  --find-links wheels 'pallas-autograder[review]' 2>&1 | tail -2) > $L/install.log 2>&1
echo "install rc=$? at $(( $(date +%s) - T0 )) s" >> $L/phases.log
timeout 300 python3 benchmarks/chip_check.py run -o $L/outcomes --phases env,outcomes \
  --outcomes-skip docs/chip-data/callL/skip.json --call-s 20 --budget-s 280 --device tpu > $L/outcomes.log 2>&1
echo "outcomes rc=$? at $(( $(date +%s) - T0 )) s" >> $L/phases.log
find $L -name divergence -type d -prune -exec rm -rf {} +
pack
cat $L/phases.log
