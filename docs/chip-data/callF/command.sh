#!/bin/bash
# Chip call F (call D again, after sharing the checked calls): the chip check as one command (README, "The TPU stage"): the tests marked
# `tpu` and `speed` on all five assignments from review sites graded on a CPU machine.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
mkdir -p $OUT/f
PIP_CONFIG_FILE=/dev/null timeout 60 python3 -m pip install -q --user --no-index --find-links .chip/wheels \
  'pallas-autograder[review]' > $OUT/f/install.log 2>&1
echo "python3 benchmarks/chip_check.py run -o OUT --prepared .chip" > $OUT/f/command.txt
timeout 560 python3 benchmarks/chip_check.py run -o $OUT/f --prepared .chip \
  --budget-s $(( 540 - ($(date +%s) - T0) )) > $OUT/f/log.txt 2>&1
echo "chip_check rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/f/log.txt
find $OUT/f -name divergence -type d -prune -exec rm -rf {} +
tar czf $OUT/callF.tgz -C $OUT f
tail -5 $OUT/f/log.txt
