#!/bin/bash
# Chip call I: the chip check as call H ran it, after the host-callback hook (pallas_surface/hooks.py),
# the speed facts' row sort and the index-map stub (pallas_surface): the tests marked `tpu` and `speed` on all five assignments.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
mkdir -p $OUT/i
PIP_CONFIG_FILE=/dev/null timeout 60 python3 -m pip install -q --user --no-index --find-links .chip/wheels \
  'pallas-autograder[review]' > $OUT/i/install.log 2>&1
echo "python3 benchmarks/chip_check.py run -o OUT --prepared .chip" > $OUT/i/command.txt
timeout 560 python3 benchmarks/chip_check.py run -o $OUT/i --prepared .chip \
  --budget-s $(( 540 - ($(date +%s) - T0) )) > $OUT/i/log.txt 2>&1
echo "chip_check rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/i/log.txt
find $OUT/i -name divergence -type d -prune -exec rm -rf {} +
tar czf $OUT/callI.tgz -C $OUT i
tail -5 $OUT/i/log.txt
