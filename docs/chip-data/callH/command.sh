#!/bin/bash
# Chip call H (call G again, the checks of a timed output a slice at a time): the chip check as one command (README, "The TPU stage"): the tests marked
# `tpu` and `speed` on all five assignments from review sites graded on a CPU machine.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
mkdir -p $OUT/h
PIP_CONFIG_FILE=/dev/null timeout 60 python3 -m pip install -q --user --no-index --find-links .chip/wheels \
  'pallas-autograder[review]' > $OUT/h/install.log 2>&1
echo "python3 benchmarks/chip_check.py run -o OUT --prepared .chip" > $OUT/h/command.txt
timeout 560 python3 benchmarks/chip_check.py run -o $OUT/h --prepared .chip \
  --budget-s $(( 540 - ($(date +%s) - T0) )) > $OUT/h/log.txt 2>&1
echo "chip_check rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/h/log.txt
find $OUT/h -name divergence -type d -prune -exec rm -rf {} +
tar czf $OUT/callH.tgz -C $OUT h
tail -5 $OUT/h/log.txt
