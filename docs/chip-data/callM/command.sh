#!/bin/bash
# Chip call M, on the lent v5e: `bash docs/chip-data/callM/command.sh` from the checkout's root,
# carrying .chip47 (call K's wheels). After on-chip's handling of a run that raises changed: a kernel
# that halts the core (kernel_missing_wait.py) must still be a halt, and a failing pl.debug_check
# still right on the chip (skip.json lists every other file); then the tests marked tpu.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
M=/tmp/callM/m
rm -rf /tmp/callM; mkdir -p $M
pack() { tar czf $OUT/callM.tgz.part -C /tmp/callM m 2>/dev/null && mv $OUT/callM.tgz.part $OUT/callM.tgz; }
echo "bash docs/chip-data/callM/command.sh" > $M/command.txt
export PYTHONUSERBASE=/tmp/callM-user
(cd .chip47/route && PIP_CONFIG_FILE=/dev/null timeout 90 python3 -m pip install --user --no-index \
  --find-links wheels 'pallas-autograder[review]' 2>&1 | tail -2) > $M/install.log 2>&1
echo "install rc=$? at $(( $(date +%s) - T0 )) s" >> $M/phases.log
timeout 200 python3 benchmarks/chip_check.py run -o $M/outcomes --phases env,outcomes \
  --outcomes-skip docs/chip-data/callM/skip.json --call-s 20 --budget-s 180 --device tpu > $M/outcomes.log 2>&1
echo "outcomes rc=$? at $(( $(date +%s) - T0 )) s" >> $M/phases.log
pack
timeout 150 python3 -m pytest -q -p no:cacheprovider -n 0 -m tpu tests > $M/tpu-tests.log 2>&1
echo "tpu tests rc=$? at $(( $(date +%s) - T0 )) s" >> $M/phases.log
pack
cat $M/phases.log
