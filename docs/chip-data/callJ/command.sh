#!/bin/bash
# Chip call J: the chip check as call I ran it, after the chip worker reads its tail only once its
# output pipes are drained (autograder/tpu/chipproc.py): the tests marked `tpu` and `speed` on all five assignments.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
mkdir -p $OUT/j
PIP_CONFIG_FILE=/dev/null timeout 60 python3 -m pip install -q --user --no-index --find-links .chip/wheels \
  'pallas-autograder[review]' > $OUT/j/install.log 2>&1
echo "python3 benchmarks/chip_check.py run -o OUT --prepared .chip" > $OUT/j/command.txt
timeout 560 python3 benchmarks/chip_check.py run -o $OUT/j --prepared .chip \
  --budget-s $(( 540 - ($(date +%s) - T0) )) > $OUT/j/log.txt 2>&1
echo "chip_check rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/j/log.txt
find $OUT/j -name divergence -type d -prune -exec rm -rf {} +
tar czf $OUT/callJ.tgz -C $OUT j
tail -5 $OUT/j/log.txt
