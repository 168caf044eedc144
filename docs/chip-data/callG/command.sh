#!/bin/bash
# Chip call G (call F again: the chip check after the model and file-set changes, with the trace read timed): the chip check as one command (README, "The TPU stage"): the tests marked
# `tpu` and `speed` on all five assignments from review sites graded on a CPU machine.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
mkdir -p $OUT/g
PIP_CONFIG_FILE=/dev/null timeout 60 python3 -m pip install -q --user --no-index --find-links .chip/wheels \
  'pallas-autograder[review]' > $OUT/g/install.log 2>&1
echo "python3 benchmarks/chip_check.py run -o OUT --prepared .chip" > $OUT/g/command.txt
timeout 560 python3 benchmarks/chip_check.py run -o $OUT/g --prepared .chip \
  --budget-s $(( 540 - ($(date +%s) - T0) )) > $OUT/g/log.txt 2>&1
echo "chip_check rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/g/log.txt
find $OUT/g -name divergence -type d -prune -exec rm -rf {} +
tar czf $OUT/callG.tgz -C $OUT g
tail -5 $OUT/g/log.txt
