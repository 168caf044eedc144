#!/bin/bash
# Chip call D: the chip check as one command (README, "The TPU stage"): the tests marked
# `tpu` and `speed` on all five assignments from review sites graded on a CPU machine.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
mkdir -p $OUT/d
PIP_CONFIG_FILE=/dev/null timeout 60 python3 -m pip install -q --user --no-index --find-links .chip/wheels \
  'pallas-autograder[review]' > $OUT/d/install.log 2>&1
echo "python3 benchmarks/chip_check.py run -o OUT --prepared .chip" > $OUT/d/command.txt
timeout 560 python3 benchmarks/chip_check.py run -o $OUT/d --prepared .chip \
  --budget-s $(( 540 - ($(date +%s) - T0) )) > $OUT/d/log.txt 2>&1
echo "chip_check rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/d/log.txt
find $OUT/d -name divergence -type d -prune -exec rm -rf {} +
tar czf $OUT/callD.tgz -C $OUT d
tail -5 $OUT/d/log.txt
