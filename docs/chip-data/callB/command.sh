#!/bin/bash
# Chip call B: the whole chip check in one command (README, "The TPU stage"): the tpu tests,
# `speed` on all five assignments from review sites graded on a CPU machine, the blind
# device-time points, and every solution and corpus kernel's outcome.
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
mkdir -p $OUT/b
PIP_CONFIG_FILE=/dev/null timeout 60 python3 -m pip install -q --user --no-index --find-links .chip/wheels \
  'pallas-autograder[review]' > $OUT/b/install.log 2>&1
echo "python3 benchmarks/chip_check.py run -o OUT --prepared .chip" > $OUT/b/command.txt
timeout 575 python3 benchmarks/chip_check.py run -o $OUT/b --prepared .chip \
  --phases env,tests,speed,points,outcomes --points blind,fit2 --budget-s $(( 560 - ($(date +%s) - T0) )) > $OUT/b/log.txt 2>&1
echo "chip_check rc=$? at $(( $(date +%s) - T0 )) s" >> $OUT/b/log.txt
find $OUT/b -name divergence -type d -prune -exec rm -rf {} +
tar czf $OUT/callB.tgz -C $OUT b
tail -3 $OUT/b/log.txt
